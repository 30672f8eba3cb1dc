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
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.checks.catalog import CATALOG
from mlxcompat.checks.spec import Case
from mlxcompat.records.bench import FailedBench
from mlxcompat.records.cell import Borrowed, CellDoc, Seconds, SubjectCounts
from mlxcompat.records.files import write_json_atomic
from mlxcompat.spec import SubjectRun
from mlxcompat.suite.cases import BenchCase, bench_cases, check_cases
from mlxcompat.suite.state import RECORDED, STATE, RunState, state_of

# The fixtures the compat tests take, registered with this plugin.
pytest_plugins = ("mlxcompat.suite.fixtures",)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcompat")
    group.addoption("--mlxcompat-run", default=None,
                    help="JSON spec of one subject run (written by `mlxcompat run`)")


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--mlxcompat-run")
    if not path:
        return
    started = time.monotonic()
    from mlxcompat.drivers.device import select_device

    spec = SubjectRun.read(path)
    device = select_device(spec.device, spec.force_cpu)
    config.stash[STATE] = RunState(spec, spec.registry(), device, CellDoc(cell=spec.cell),
                                    clock={"configure": started})


def pytest_sessionstart(session: pytest.Session) -> None:
    state = state_of(session.config)
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
        before = _footprint(state) if spec.entry_points else None
        state.doc.patches = apply_subject(spec.subject, spec.entry_points,
                                          state.registry.roles)
        failed = [p for p in state.doc.patches if p.observed == "error"]
        if failed:
            state.broken = "; ".join(f"entry point {p.role} failed: {p.detail}"
                                     for p in failed)
        elif before is not None and spec.borrow_from:
            _decide_borrowing(state, before)
    state.save()


def _footprint(state: RunState) -> Any:
    from mlxcompat import footprint

    targets = [t for role in state.registry.roles.values() for t in role.targets]
    footprint.prepare([*targets, *footprint.family_modules(state.spec.models)])
    return footprint.take()


def _decide_borrowing(state: RunState, before: Any) -> None:
    """Borrow `none`'s behaviour rows when nothing the entry points did is observed."""
    from mlxcompat import footprint
    from mlxcompat.borrow import why_not

    reasons = why_not(state.doc.patches, footprint.changes(before, footprint.take()))
    source = state.spec.borrow_from
    if reasons:
        state.line(f"runs its own behaviour checks: {'; '.join(reasons[:3])[:300]}")
    else:
        state.borrowed = Borrowed(source=source)
        state.line(f"its entry points changed nothing: behaviour rows are {source}'s")


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
    state = state_of(config)
    if state is None:
        return
    empty = [i for i in items if not any(isinstance(v, Case | BenchCase)
                                         for v in _params(i).values())]
    if state.borrowed is not None:
        empty += _borrowed(state.borrowed, items)
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [i for i in items if i not in empty]
    items.sort(key=_order)


def _borrowed(borrowed: Borrowed, items: list[pytest.Item]) -> list[pytest.Item]:
    """The behaviour cases and timed rounds a borrowing subject does not run (named)."""
    from mlxcompat.borrow import case_keys

    found = []
    for item in items:
        params = _params(item)
        case = params.get("case")
        if isinstance(case, Case) and not CATALOG[case.check].runs_when_broken:
            borrowed.cases.append(case_keys(case))
            found.append(item)
        elif isinstance(params.get("bench_case"), BenchCase):
            found.append(item)
    return found


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize the compat tests: `case` from the catalog, `bench_case` from the profile."""
    state = state_of(metafunc.config)
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
    state = state_of(item.config)
    if state is None or item.stash.get(RECORDED, False) or not report.failed:
        return report
    lines = str(report.longreprtext).strip().splitlines()
    detail = "harness error outside the check: " + (lines[-1] if lines else report.outcome)
    params = _params(item)
    bench, case = params.get("bench_case"), params.get("case")
    if isinstance(bench, BenchCase):
        state.doc.bench.append(FailedBench(model=bench.model, batch=bench.batch,
                                           subject=state.spec.subject, dtype=bench.dtype,
                                           prompts=bench.prompts,
                                           what=bench.kind, detail=detail))
        item.stash[RECORDED] = True
        state.save()
    elif isinstance(case, Case):
        state.append(item, case.row(state.spec.subject, "error", detail))
    return report


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Note when the timed rounds begin (for the cell's time breakdown)."""
    state = state_of(item.config)
    if state is not None and isinstance(_params(item).get("bench_case"), BenchCase):
        state.clock.setdefault("bench", time.monotonic())


def pytest_collection_finish(session: pytest.Session) -> None:
    state = state_of(session.config)
    if state is None:
        return
    state.clock["checks"] = time.monotonic()
    counted = [i for i in session.items if isinstance(_params(i).get("case"), Case)]
    state.doc.subjects[state.spec.subject] = SubjectCounts(
        collected=len(counted), bench_cases=len(session.items) - len(counted),
        borrowed=state.borrowed)
    state.save()


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = state_of(session.config)
    if state is None:
        return
    state.flush_group()
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
