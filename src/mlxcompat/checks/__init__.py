"""Checks: each module declares a `CheckSpec` (its cases, how one runs, its keys); the
catalog (`checks.catalog`) collects them. A check never branches on a version string."""

DEFAULT_TOLERANCE = 1e-4
