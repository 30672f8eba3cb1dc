"""Where a verdict changes between two neighbouring cells of an axis, said exactly or as a
range: "fixed in 0.7.10" only when no PyPI release lies between 0.7.10 and the cell before
it; otherwise "fixed after 0.7.8, by 0.7.10 (0.7.9 not measured)". The release lists come
from the drift scan (drift.json `releases`), so the report needs no network."""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

Releases = dict[str, list[str]]  # axis -> every final release on PyPI, oldest first


def between(releases: Releases, axis: str, low: str, high: str) -> list[str] | None:
    """Releases strictly between `low` and `high` (None: the axis's list is not known)."""
    if axis not in releases:
        return None
    try:
        lo, hi = Version(low), Version(high)
    except InvalidVersion:
        return None
    return [v for v in releases[axis] if lo < Version(v) < hi]


def edge(releases: Releases, axis: str, before: str, at: str, verb: str) -> tuple[str, bool]:
    """(`fixed in 0.32.0` or `fixed after 0.31.3, by 0.32.0 (…)`, exact) for a change between
    the cells `before` and `at` of one axis (versions). `verb`: "first bad" or "fixed in"."""
    prefix = "vlm " if axis == "mlx-vlm" else "lm "
    gap = between(releases, axis, before, at)
    if gap == []:
        return f"{verb} {prefix}{at}", True
    late = "first bad" if verb == "first bad" else "fixed"
    unknown = "releases between not known" if gap is None else \
        f"{', '.join(gap[:3])}{' …' if len(gap) > 3 else ''} not measured"
    return f"{late} after {prefix}{before}, by {at} ({unknown})", False
