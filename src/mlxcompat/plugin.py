"""pytest plugin (entry point `pytest11`): runs one subject's checks and records every verdict.

Inert unless `--mlxcompat-run=<spec.json>` names a run (so installing mlxcompat never touches
another project's test sessions). The subject is applied at session start, before any model
code runs, because patches are process state. Test cases come from the catalog of checks
(`checks.catalog`) for the spec's models and roles, one collected test per result row; the
partial cell document is rewritten atomically after every test, so a crash keeps what ran.
Every collected test ends with exactly one row: a test that raised outside its check is an
`error` row (a `failed` bench row for a throughput case).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.checks.catalog import CATALOG
from mlxcompat.checks.spec import Case, Context
from mlxcompat.records.bench import BenchRow, FailedBench
from mlxcompat.records.cell import CellDoc, Seconds, SubjectCounts
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.names import VERDICTS
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry
from mlxcompat.spec import SubjectRun
from mlxcompat.suite.cases import BenchCase, bench_cases, check_cases


@dataclass
class RunState:
    """This process's run: its spec, the document it writes, and progress counters."""

    spec: SubjectRun
    registry: Registry
    device: dict[str, Any]
    doc: CellDoc
    broken: str = ""  # why the subject cannot be measured ("" when its patches applied)
    counts: dict[tuple[str, str], Counter] = field(default_factory=dict)
    total: Counter = field(default_factory=Counter)
    group: tuple[str, str] | None = None
    clock: dict[str, float] = field(default_factory=dict)
    need: NeedRecord | None = None

    def save(self) -> None:
        write_json_atomic(Path(self.spec.out), self.doc.to_json())

    def line(self, text: str) -> None:
        print(f"\n[mlxcompat] {self.spec.cell} {self.spec.subject}: {text}", flush=True)


_STATE = pytest.StashKey[RunState]()
_RECORDED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcompat")
    group.addoption("--mlxcompat-run", default=None,
                    help="JSON spec of one subject run (written by `mlxcompat run`)")


def _state(config: pytest.Config) -> RunState | None:
    return config.stash.get(_STATE, None)


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--mlxcompat-run")
    if not path:
        return
    started = time.monotonic()
    from mlxcompat.drivers.device import select_device

    spec = SubjectRun.read(path)
    device = select_device(spec.device, spec.force_cpu)
    config.stash[_STATE] = RunState(spec, spec.registry(), device, CellDoc(cell=spec.cell),
                                    clock={"configure": started})


def pytest_sessionstart(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    from mlxcompat.drivers.environment import describe_environment
    from mlxcompat.subjects import apply_subject

    spec = state.spec
    state.doc.env = describe_environment().model_copy(update=state.device)
    if spec.hosts_need_probe and not spec.entry_points:
        # A subject without patches is a clean process: the need probe runs here, first.
        from mlxcompat.checks.need import probe_needs

        write_json_atomic(Path(spec.need_path), probe_needs().to_json())
    if spec.install_error:
        state.broken = f"subject did not install: {spec.install_error}"
    else:
        state.doc.patches = apply_subject(spec.subject, spec.entry_points,
                                          state.registry.roles)
        failed = [p for p in state.doc.patches if p.observed == "error"]
        if failed:
            state.broken = "; ".join(f"entry point {p.role} failed: {p.detail}"
                                     for p in failed)
    state.save()


def _counts(counter: Counter) -> str:
    return " ".join(f"{v}={counter.get(v, 0)}" for v in VERDICTS)


def _flush_group(state: RunState) -> None:
    """One progress line per finished (check, model) group, with running totals."""
    if state.group is None:
        return
    check, model = state.group
    state.line(f"{check} {model or '-'}: {_counts(state.counts[state.group])} | total "
               f"{_counts(state.total)}")
    state.group = None


def _append(item: pytest.Item, state: RunState, result: ResultRow) -> None:
    state.doc.results.append(result)
    item.stash[_RECORDED] = True
    group = (result.check, result.model)
    if state.group not in (None, group):
        _flush_group(state)
    state.group = group
    state.counts.setdefault(group, Counter())[result.verdict] += 1
    state.total[result.verdict] += 1
    state.save()


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
    state = _state(request.config)
    if state is None:
        pytest.skip("not an mlxcompat run (no --mlxcompat-run)")
    return state.spec


@pytest.fixture(scope="session")
def registry(request: pytest.FixtureRequest) -> Registry | None:
    state = _state(request.config)
    return state.registry if state else None


@pytest.fixture(scope="session")
def check_context(request: pytest.FixtureRequest, mlxcompat_run: SubjectRun) -> Context:
    state = _state(request.config)
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
    state = _state(request.config)
    item = request.node

    def _record(result: ResultRow) -> None:
        assert state is not None
        _append(item, state, result)
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
    state = _state(request.config)
    return state.broken if state else ""


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    state = _state(request.config)
    return state.doc.env.backend or "cpu" if state else "cpu"


@pytest.fixture(scope="session")
def turn_taker(mlxcompat_run: SubjectRun) -> Any:
    """This worker's side of the runner's turn-taking (every turn granted by hand)."""
    from mlxcompat.turns import turn_taker_from

    return turn_taker_from(mlxcompat_run.turn_ends, mlxcompat_run.bench_cpu)


@pytest.fixture
def record_bench(request: pytest.FixtureRequest) -> Callable[[BenchRow], None]:
    """Append a throughput row to the cell JSON (written at once, like verdicts)."""
    state = _state(request.config)
    item = request.node

    def _record(row: BenchRow) -> None:
        assert state is not None
        state.doc.bench.append(row)
        item.stash[_RECORDED] = True
        state.save()

    return _record


def _params(item: pytest.Item) -> dict[str, Any]:
    return dict(getattr(getattr(item, "callspec", None), "params", {}))


def _order(item: pytest.Item) -> int:
    """Correctness first, then the subject's own rows (they wait for the need probe), then
    the timed rounds: nothing else runs in this process while it is measured."""
    params = _params(item)
    if isinstance(params.get("case"), Case):
        return CATALOG[params["case"].check].order
    bench = params.get("bench_case")
    return 20 if isinstance(bench, BenchCase) and bench.kind == "sequential" else 10


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the placeholder pytest makes for a test with no case here; order the rest."""
    if _state(config) is None:
        return
    empty = [i for i in items if not any(isinstance(v, Case | BenchCase)
                                         for v in _params(i).values())]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [i for i in items if i not in empty]
    items.sort(key=_order)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the compat tests: `case` from the catalog, `bench_case` from the profile."""
    state = _state(metafunc.config)
    if state is None:
        return
    if "case" in metafunc.fixturenames:
        cases = check_cases(state.spec, state.registry)
        metafunc.parametrize("case", cases, ids=[f"{c.check}-{c.id}" for c in cases])
    elif "bench_case" in metafunc.fixturenames:
        from mlxcompat.suite.test_bench import BENCH_KIND

        kind = BENCH_KIND.get(metafunc.function.__name__, "")
        found = bench_cases(state.spec, state.registry, kind)
        metafunc.parametrize("bench_case", found, ids=[c.id for c in found])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test that ended without a row (a fixture or the harness raised) gets an error row."""
    report = yield
    state = _state(item.config)
    if state is None or item.stash.get(_RECORDED, False) or not report.failed:
        return report
    lines = str(report.longreprtext).strip().splitlines()
    detail = "harness error outside the check: " + (lines[-1] if lines else report.outcome)
    params = _params(item)
    bench, case = params.get("bench_case"), params.get("case")
    if isinstance(bench, BenchCase):
        state.doc.bench.append(FailedBench(model=bench.model, batch=bench.batch,
                                           subject=state.spec.subject, dtype=bench.dtype,
                                           what=bench.kind, detail=detail))
        item.stash[_RECORDED] = True
        state.save()
    elif isinstance(case, Case):
        _append(item, state, case.row(state.spec.subject, "error", detail))
    return report


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Note when the timed rounds begin (for the cell's time breakdown)."""
    state = _state(item.config)
    if state is not None and isinstance(_params(item).get("bench_case"), BenchCase):
        state.clock.setdefault("bench", time.monotonic())


def pytest_collection_finish(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    state.clock["checks"] = time.monotonic()
    counted = [i for i in session.items if isinstance(_params(i).get("case"), Case)]
    state.doc.subjects[state.spec.subject] = SubjectCounts(
        collected=len(counted), bench_cases=len(session.items) - len(counted))
    state.save()


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    _flush_group(state)
    clock, now = state.clock, time.monotonic()
    bench = clock.get("bench", now)
    counts = state.doc.subjects.setdefault(state.spec.subject, SubjectCounts())
    counts.seconds = Seconds(start=round(clock.get("checks", now) - clock["configure"], 2),
                             checks=round(bench - clock.get("checks", now), 2),
                             bench=round(now - bench, 2))
    # The turn is not given back here: the coordinator ends it when this process exits, so
    # its teardown never runs beside another worker's timed round.
    for row in state.doc.patches:
        state.line(f"patch {row.role}: {row.observed} ({row.detail[:160]})")
    state.save()
