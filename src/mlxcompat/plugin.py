"""pytest plugin (entry point `pytest11`): runs one subject's checks and records every verdict.

Inert unless `--mlxcompat-run=<spec.json>` names a run (so installing mlxcompat never touches
another project's test sessions). The subject is applied at session start, before any model
code runs, because patches are process state. Test cases come from the spec (the matrix's
models, roles, checks and modes), one collected test per result row; the partial document
is rewritten atomically after every test, so a crash keeps what ran. Every collected test
ends with exactly one row: a test that raised outside its check is an `error` row.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.results import VERDICTS, CheckResult, empty_cell, write_json_atomic
from mlxcompat.spec import SubjectRun

_KEY = pytest.StashKey[dict[str, Any]]()
_RECORDED = pytest.StashKey[bool]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcompat")
    group.addoption("--mlxcompat-run", default=None,
                    help="JSON spec of one subject run (written by `mlxcompat run`)")


def _state(config: pytest.Config) -> dict[str, Any] | None:
    return config.stash.get(_KEY, None)


def pytest_configure(config: pytest.Config) -> None:
    path = config.getoption("--mlxcompat-run")
    if not path:
        return
    import time

    started = time.monotonic()
    from mlxcompat.drivers.device import select_device

    spec = SubjectRun.read(path)
    device = select_device(spec.device, spec.force_cpu)
    doc = empty_cell(spec.cell)
    config.stash[_KEY] = {"spec": spec, "registry": spec.registry(), "device": device,
                          "doc": doc, "counts": {}, "total": Counter(), "group": None,
                          "broken": "", "clock": {"configure": started}}


def pytest_sessionstart(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    from mlxcompat.drivers.environment import describe_environment
    from mlxcompat.subjects import apply_subject

    spec: SubjectRun = state["spec"]
    state["doc"]["env"] = {**describe_environment(), **state["device"]}
    if spec.host_probe and not spec.entry_points:
        # A subject without patches is a clean process: the need probe runs here, first.
        from mlxcompat.drivers.need import probe_needs

        write_json_atomic(Path(spec.probe), probe_needs())
    if spec.install_error:
        state["broken"] = f"subject did not install: {spec.install_error}"
    else:
        rows = apply_subject(spec.subject, spec.entry_points, state["registry"].roles)
        state["doc"]["patches"] = rows
        failed = [r for r in rows if r["status"] == "error"]
        if failed:
            state["broken"] = "; ".join(f"entry point {r['patch']} failed: {r['detail']}"
                                        for r in failed)
    _save(session.config)


def _save(config: pytest.Config) -> None:
    state = _state(config)
    if state is not None:
        write_json_atomic(Path(state["spec"].out), state["doc"])


def _line(state: dict[str, Any], text: str) -> None:
    spec = state["spec"]
    print(f"\n[mlxcompat] {spec.cell} {spec.subject}: {text}", flush=True)


def _counts(counter: Counter) -> str:
    return " ".join(f"{v}={counter.get(v, 0)}" for v in VERDICTS)


def _flush_group(state: dict[str, Any]) -> None:
    """One progress line per finished (check, model) group, with running totals."""
    if state["group"] is None:
        return
    check, model = state["group"]
    group = state["counts"][check][model]
    _line(state, f"{check} {model or '-'}: {_counts(group)} | total {_counts(state['total'])}")
    state["group"] = None


def _note(state: dict[str, Any], result: CheckResult) -> None:
    if state["group"] not in (None, (result.check, result.model)):
        _flush_group(state)
    state["group"] = (result.check, result.model)
    state["counts"].setdefault(result.check, {}).setdefault(result.model, Counter())
    state["counts"][result.check][result.model][result.verdict] += 1
    state["total"][result.verdict] += 1


def _append(item: pytest.Item, result: CheckResult) -> None:
    state = _state(item.config)
    assert state is not None
    state["doc"]["results"].append(result.to_json())
    item.stash[_RECORDED] = True
    _note(state, result)
    _save(item.config)


@pytest.fixture(scope="session")
def mlxcompat_run(request: pytest.FixtureRequest) -> SubjectRun:
    state = _state(request.config)
    if state is None:
        pytest.skip("not an mlxcompat run (no --mlxcompat-run)")
    return state["spec"]


@pytest.fixture(scope="session")
def registry(request: pytest.FixtureRequest) -> Any:
    state = _state(request.config)
    return state["registry"] if state else None


@pytest.fixture(scope="session")
def subject_name(mlxcompat_run: SubjectRun) -> str:
    return mlxcompat_run.subject


@pytest.fixture(scope="session")
def tolerance(mlxcompat_run: SubjectRun) -> float:
    return float(mlxcompat_run.tolerance)


@pytest.fixture(scope="session")
def patch_rows(request: pytest.FixtureRequest) -> dict[str, dict[str, Any]]:
    state = _state(request.config)
    return {r["patch"]: r for r in state["doc"]["patches"]} if state else {}


@pytest.fixture(scope="session")
def capabilities(mlxcompat_run: SubjectRun) -> dict[str, Any]:
    """The clean-process probe of this cell (empty when none was run).

    The probe runs beside the subjects; these rows come after the correctness checks, and
    wait for its record if it is not written yet.
    """
    import json
    import time

    if not mlxcompat_run.probe:
        return {}
    path = Path(mlxcompat_run.probe)
    done = path.with_suffix(".done")
    while not path.exists() and not done.exists():
        time.sleep(0.2)
    if not path.exists():
        return {"error": done.read_text(encoding="utf-8")}
    return dict(json.loads(path.read_text(encoding="utf-8")))


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Callable[[CheckResult], None]:
    """Record a result in the cell JSON and turn its verdict into the pytest outcome.

    For a subject that did not install or whose entry point failed, the test is not run:
    its row is an `error` naming why, so a broken subject can never look green.
    """
    state = _state(request.config)
    item = request.node

    def _record(result: CheckResult) -> None:
        _append(item, result)
        if result.verdict == "skip":
            pytest.skip(result.detail)
        if result.verdict in ("fail", "error"):
            pytest.fail(f"{result.verdict}: {result.detail}", pytrace=False)

    if state and state["broken"] and not getattr(request.function, "runs_when_broken", False):
        check, mode, model = _identity(item)
        _record(CheckResult(check, "error", mode, model, state["spec"].subject,
                            detail=f"not run: {state['broken']}"))
    return _record


@pytest.fixture(scope="session")
def broken_reason(request: pytest.FixtureRequest) -> str:
    """Why this subject cannot be measured ('' when its patches applied)."""
    state = _state(request.config)
    return state["broken"] if state else ""


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    state = _state(request.config)
    return str(state["doc"]["env"].get("backend", "cpu")) if state else "cpu"


@pytest.fixture(scope="session")
def bench_gate(request: pytest.FixtureRequest, mlxcompat_run: SubjectRun) -> Any:
    """This worker's side of the runner's turn gate (every turn granted when run by hand)."""
    from mlxcompat.gate import gate_from

    gate = gate_from(mlxcompat_run.gate, mlxcompat_run.bench_cpu)
    state = _state(request.config)
    if state is not None:
        state["gate"] = gate
    return gate


@pytest.fixture
def record_bench(request: pytest.FixtureRequest) -> Callable[[dict[str, Any]], None]:
    """Append a throughput row to the cell JSON (written at once, like verdicts)."""
    state = _state(request.config)
    item = request.node

    def _record(row: dict[str, Any]) -> None:
        assert state is not None
        state["doc"]["bench"].append(row)
        item.stash[_RECORDED] = True
        _save(request.config)

    return _record


BENCH_CHECKS = ("throughput", "sequential")
# Correctness first, then the subject's own rows (they wait for the clean-process probe),
# then the timed rounds: nothing else runs in this process while it is measured.
_ORDER = {"install": 0, "import": 0, "patch-status": 3, "idempotence": 3, "throughput": 8,
          "sequential": 9}


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Drop the placeholder pytest makes for a check with no case here; order the rest."""
    if _state(config) is None:
        return
    from mlxcompat.suite.cases import Case

    empty = [i for i in items if "case" in getattr(i, "fixturenames", ())
             and not isinstance(getattr(getattr(i, "callspec", None), "params", {}).get("case"),
                                Case)]
    if empty:
        config.hook.pytest_deselected(items=empty)
        items[:] = [i for i in items if i not in empty]
    items.sort(key=lambda item: _ORDER.get(_identity(item)[0], 1))


def _identity(item: pytest.Item) -> tuple[str, str, str]:
    """(check, mode, model) of a collected test, from its parameters."""
    params = getattr(getattr(item, "callspec", None), "params", {})
    case = params.get("case")
    if case is not None:
        return case.check, case.mode, case.model
    name = getattr(item, "originalname", item.name)
    return name.removeprefix("test_").replace("_", "-"), "", ""


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize every compat test by its cases: the spec's models, roles and modes."""
    state = _state(metafunc.config)
    if state is None or "case" not in metafunc.fixturenames:
        return
    from mlxcompat.suite.cases import cases_for

    check = getattr(metafunc.function, "check", None)
    cases = cases_for(check, state["spec"], state["registry"]) if check else []
    metafunc.parametrize("case", cases, ids=[c.id for c in cases])


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Any:
    """A test that ended without a row (a fixture or the harness raised) gets an error row."""
    report = yield
    state = _state(item.config)
    if state is None or item.stash.get(_RECORDED, False):
        return report
    if report.failed:
        check, mode, model = _identity(item)
        lines = str(report.longreprtext).strip().splitlines()
        detail = "harness error outside the check: " + (lines[-1] if lines else report.outcome)
        if check in BENCH_CHECKS:
            case = item.callspec.params["case"]  # type: ignore[attr-defined]
            state["doc"]["bench"].append({"kind": check, "model": case.model, "batch": case.batch,
                                          "subject": state["spec"].subject, "error": detail})
            item.stash[_RECORDED] = True
            _save(item.config)
        else:
            _append(item, CheckResult(check, "error", mode, model, state["spec"].subject,
                                      detail=detail))
    return report


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Note when the timed rounds begin (for the cell's time breakdown)."""
    state = _state(item.config)
    if state is not None and _identity(item)[0] in BENCH_CHECKS:
        import time

        state["clock"].setdefault("bench", time.monotonic())


def pytest_collection_finish(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    import time

    state["clock"]["checks"] = time.monotonic()
    counted = [i for i in session.items if _identity(i)[0] not in BENCH_CHECKS]
    state["doc"]["subjects"][state["spec"].subject] = {"collected": len(counted),
                                                       "bench_cases": len(session.items)
                                                       - len(counted)}
    _save(session.config)


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = _state(session.config)
    if state is None:
        return
    _flush_group(state)
    import time

    clock, now = state["clock"], time.monotonic()
    bench = clock.get("bench", now)
    state["doc"]["subjects"][state["spec"].subject]["seconds"] = {
        "start": round(clock.get("checks", now) - clock["configure"], 2),
        "checks": round(bench - clock.get("checks", now), 2),
        "bench": round(now - bench, 2)}
    # The turn is not given back here: the coordinator ends it when this process exits, so
    # its teardown never runs beside another worker's timed round.
    for row in state["doc"]["patches"]:
        _line(state, f"patch {row['patch']}: {row['status']} ({row['detail'][:160]})")
    _save(session.config)
