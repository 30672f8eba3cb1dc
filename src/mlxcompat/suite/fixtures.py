"""The fixtures of the compat tests (registered by `mlxcompat.plugin`): the run's spec, the
context a check runs in, and the recorders that write rows into the cell document."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.checks.catalog import CATALOG
from mlxcompat.checks.spec import Case, Context
from mlxcompat.records.bench import BenchRow
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry
from mlxcompat.spec import SubjectRun
from mlxcompat.suite.state import RECORDED, RunState, state_of


def _need(state: RunState) -> NeedRecord:
    """The need probe's record of this cell, waited for (it runs beside the subjects; the
    rows that read it come after the behaviour checks)."""
    if state.need is not None:
        return state.need
    spec = state.spec
    if not spec.need_path:
        state.need = NeedRecord(error="no need probe ran for this cell")
        return state.need
    path = Path(spec.need_path)
    done = path.with_suffix(".done")
    while not path.exists() and not done.exists():
        time.sleep(0.2)
    if path.exists():
        import json

        state.need = NeedRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    else:
        state.need = NeedRecord(error=done.read_text(encoding="utf-8"))
    return state.need


@pytest.fixture(scope="session")
def mlxcompat_run(request: pytest.FixtureRequest) -> SubjectRun:
    state = state_of(request.config)
    if state is None:
        pytest.skip("not an mlxcompat run (no --mlxcompat-run)")
    return state.spec


@pytest.fixture(scope="session")
def registry(request: pytest.FixtureRequest) -> Registry | None:
    state = state_of(request.config)
    return state.registry if state else None


@pytest.fixture(scope="session")
def check_context(request: pytest.FixtureRequest, mlxcompat_run: SubjectRun) -> Context:
    state = state_of(request.config)
    assert state is not None
    return Context(mlxcompat_run.subject, state.registry, float(mlxcompat_run.tolerance),
                   mlxcompat_run.install_error, {p.role: p for p in state.doc.patches},
                   lambda: _need(state))


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Callable[[ResultRow], None]:
    """Record a result in the cell JSON and turn its verdict into the pytest outcome.

    For a subject that did not install or whose entry point failed, the test is not run:
    its row is an `error` naming why, so a broken subject can never look green.
    """
    state = state_of(request.config)
    item = request.node

    def _record(result: ResultRow) -> None:
        assert state is not None
        state.append(item, result)
        if result.verdict == "skip":
            pytest.skip(result.detail)
        if result.verdict in ("fail", "error"):
            pytest.fail(f"{result.verdict}: {result.detail}", pytrace=False)

    case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
    if state and state.broken and isinstance(case, Case) \
            and not CATALOG[case.check].runs_when_broken:
        _record(case.row(state.spec.subject, "error", f"not run: {state.broken}"))
    return _record


@pytest.fixture(scope="session")
def broken_reason(request: pytest.FixtureRequest) -> str:
    """Why this subject cannot be measured ('' when its patches applied)."""
    state = state_of(request.config)
    return state.broken if state else ""


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    state = state_of(request.config)
    return state.doc.env.backend or "cpu" if state else "cpu"


@pytest.fixture(scope="session")
def turn_taker(mlxcompat_run: SubjectRun) -> Any:
    """This worker's side of the runner's turn-taking (every turn granted by hand)."""
    from mlxcompat.turns import turn_taker_from

    return turn_taker_from(mlxcompat_run.turn_ends, mlxcompat_run.bench_cpu)


@pytest.fixture(scope="session")
def placement(mlxcompat_run: SubjectRun) -> Any:
    """Where this unpinned worker's timed thread runs (`free`: wherever the kernel puts it)."""
    from mlxcompat.placement import Placement

    return Placement(mlxcompat_run.bench_place or "free")


@pytest.fixture
def record_bench(request: pytest.FixtureRequest) -> Callable[[BenchRow], None]:
    """Append a throughput row to the cell JSON (written at once, like verdicts)."""
    state = state_of(request.config)
    item = request.node

    def _record(row: BenchRow) -> None:
        assert state is not None
        state.doc.bench.append(row)
        item.stash[RECORDED] = True
        state.save()

    return _record


