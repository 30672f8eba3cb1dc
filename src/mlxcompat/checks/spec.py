"""A check as one registered unit: its cases, how a case runs, and how its rows are keyed.

Each check module declares a `SPEC`; `checks.catalog` collects them. Everything that used to
list checks (the suite's cases, the matrix's `checks:`, `--checks`, bisect, the report's
tables, the keys an expectation may match) reads the catalog instead.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mlxcompat.errors import SkipCheck, describe_exception
from mlxcompat.records.names import KEYS
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import ModelDecl, Registry


@dataclass(frozen=True)
class Case:
    """One result row to come: a check and the keys that say what it is about."""

    check: str
    model: str = ""
    mode: str = ""
    role: str = ""
    scenario: str = ""
    path: str = ""
    test: str = ""
    dtype: str = ""

    @property
    def id(self) -> str:
        parts = (self.model, self.mode, self.role, self.scenario, self.path, self.test,
                 self.dtype)
        return "-".join(p for p in parts if p) or self.check

    def row(self, subject: str, verdict: str, detail: str = "", **fields: Any) -> ResultRow:
        keys = {k: getattr(self, k) for k in KEYS}
        return ResultRow(check=self.check, subject=subject, verdict=verdict,
                         detail=detail, **keys, **fields)


@dataclass(frozen=True)
class Selection:
    """What one subject process was asked to run (the cases of every check come from it)."""

    subject: str
    registry: Registry
    models: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()  # the subject's entry points, in declaration order
    installs: bool = False
    checks: tuple[str, ...] = ()  # empty: every check of the run
    only: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (key, allowed values), e.g. modes

    def models_of(self, runner: str) -> list[ModelDecl]:
        return [self.registry.models[m] for m in self.models
                if self.registry.models[m].runner == runner]


@dataclass
class Context:
    """What a case needs when it runs in the subject's process."""

    subject: str
    registry: Registry
    tolerance: float
    install_error: str = ""
    patches: dict[str, PatchRow] = field(default_factory=dict)  # by role
    need: Callable[[], NeedRecord] = NeedRecord


@dataclass(frozen=True)
class CheckSpec:
    """A check: `cases(selection)` lists its rows to come, `run(case, context)` makes one."""

    name: str
    keys: tuple[str, ...]  # the row fields that identify a line of its table (subject last)
    cases: Callable[[Selection], list[Case]]
    run: Callable[[Case, Context], ResultRow]
    values: Callable[[Registry], dict[str, tuple[str, ...] | None]] = lambda _: {}
    runs_when_broken: bool = False  # reports on the subject itself, so it runs regardless
    selectable: bool = True  # the suite runs it; it may be named in `checks:` / `--checks`
    always: bool = False  # part of every run, whatever matrix.yaml's `checks:` says
    bisectable: bool = True
    default: bool = True  # in a matrix that lists no `checks:` (heavy ones opt in per cell)
    order: int = 1  # collection order: 0 the subject itself, 1 behaviour, 3 patch rows


def guarded(case: Case, subject: str, body: Callable[[], ResultRow]) -> ResultRow:
    """Run `body`; SkipCheck becomes `skip`, any other exception `error` with where it
    was raised, so one broken release never aborts a run. An error from mlx's shared kernel
    cache half written by another process (`drivers.kernel_cache`) runs it once more, and
    the row keeps the first attempt's error in `metrics.retried_after`."""
    from mlxcompat.drivers.kernel_cache import RETRY_PAUSE_S, is_half_written

    start = time.perf_counter()
    result, raised = _attempt(case, subject, body)
    if result.verdict == "error" and is_half_written(raised):
        time.sleep(RETRY_PAUSE_S)
        again, _ = _attempt(case, subject, body)
        result = again.model_copy(update={"metrics": {**again.metrics,
                                                      "retried_after": raised[-400:]}})
    return replace_seconds(result, time.perf_counter() - start)


def _attempt(case: Case, subject: str, body: Callable[[], ResultRow]) -> tuple[ResultRow, str]:
    """The row, and the full text of what was raised ('' when nothing was)."""
    try:
        return body(), ""
    except SkipCheck as exc:
        return case.row(subject, "skip", str(exc)), ""
    except Exception as exc:
        return case.row(subject, "error", describe_exception(exc)), f"{exc}"


def replace_seconds(row: ResultRow, seconds: float) -> ResultRow:
    return row.model_copy(update={"seconds": round(seconds, 4)})


def wanted(selection: Selection, cases: list[Case]) -> list[Case]:
    """The cases the selection asks for: `--checks`, and per key (`--modes`, `--roles`, …)
    the allowed values; a key filters only the cases that have it (a mode filter leaves
    GLM4V's scenarios alone)."""
    def keep(case: Case) -> bool:
        if selection.checks and case.check not in selection.checks:
            return False
        return all(not getattr(case, key) or getattr(case, key) in allowed
                   for key, allowed in selection.only)

    return [c for c in cases if keep(c)]


__all__ = ["Case", "CheckSpec", "Context", "Selection", "guarded", "replace_seconds", "wanted"]
