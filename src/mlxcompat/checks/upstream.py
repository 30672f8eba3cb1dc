"""`upstream-suite`: mlx-lm's own tests without and with a subject (run by `nox -t upstream`
through `mlxcompat.upstream_suite`, not by the compat suite; declared here for the report)."""

from __future__ import annotations

from mlxcompat.checks.spec import Case, CheckSpec, Context
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry


def _no_cases(_: object) -> list[Case]:
    return []


def _not_in_the_suite(case: Case, ctx: Context) -> ResultRow:
    raise RuntimeError("upstream-suite runs through `nox -t upstream`, not the compat suite")


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"test": None}  # any upstream test id


SPEC = CheckSpec("upstream-suite", ("test", "subject"), _no_cases, _not_in_the_suite, _values,
                 selectable=False, bisectable=False, order=9)
