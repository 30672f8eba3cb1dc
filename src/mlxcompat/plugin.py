"""pytest plugin for `tests/compat`: activates one subject, records every verdict in a JSON.

Loaded with `-p mlxcompat.plugin` (as `mlxcompat run` does). The subject is applied at
session start, before any model code runs, because patches are process state. The partial
cell document is rewritten atomically after every test, so a crash keeps what ran.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.results import VERDICTS, CheckResult, empty_cell, write_json_atomic

_KEY = pytest.StashKey[dict[str, Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlxcompat")
    group.addoption("--mlxcompat-subject", default="none", help="subject name to record")
    group.addoption("--mlxcompat-entry-points", default="{}",
                    help='JSON {"role": "module:function"} of the subject')
    group.addoption("--mlxcompat-out", default=None, help="where to write this run's JSON")
    group.addoption("--mlxcompat-cell", default="local", help="cell id recorded in the JSON")
    group.addoption("--mlxcompat-tolerance", type=float, default=1e-4, help="max |Δ logprob|")
    group.addoption("--mlxcompat-models", default="", help="comma list to restrict models")
    group.addoption("--mlxcompat-device", default="cpu", choices=("cpu", "gpu"),
                    help="MLX device for every check (chosen before mlx-lm is imported)")
    group.addoption("--mlxcompat-force-cpu", default="",
                    help="comma list of GPU-name patterns to pass over for the CPU")
    group.addoption("--mlxcompat-checks", default="", help="comma list of checks to run")
    group.addoption("--mlxcompat-modes", default="", help="comma list of modes to run")
    group.addoption("--mlxcompat-bench", default="off",
                    help="JSON of a bench Profile (see mlxcompat.bench), or off")


def pytest_configure(config: pytest.Config) -> None:
    from mlxcompat.drivers.device import select_device

    patterns = [p for p in config.getoption("--mlxcompat-force-cpu").split(",") if p]
    device = select_device(config.getoption("--mlxcompat-device"), patterns)
    config.stash[_KEY] = {
        "device": device,
        "doc": empty_cell(config.getoption("--mlxcompat-cell")),
        "subject": config.getoption("--mlxcompat-subject"),
        "entry_points": json.loads(config.getoption("--mlxcompat-entry-points")),
        "counts": {},
        "total": Counter(),
        "group": None,
    }


def pytest_sessionstart(session: pytest.Session) -> None:
    from mlxcompat.drivers.environment import describe_environment
    from mlxcompat.subjects import apply_subject

    state = session.config.stash[_KEY]
    state["doc"]["env"] = {**describe_environment(), **state["device"]}
    rows = apply_subject(state["subject"], state["entry_points"])
    state["doc"]["patches"] = rows
    missing = rows and all(r["status"] == "unavailable" for r in rows)
    state["unavailable"] = None
    if missing:
        state["unavailable"] = f"subject {state['subject']} not installed here: {rows[0]['detail']}"
    _save(session.config)


def _save(config: pytest.Config) -> None:
    out = config.getoption("--mlxcompat-out")
    if out:
        write_json_atomic(Path(out), config.stash[_KEY]["doc"])


def _line(state: dict[str, Any], text: str) -> None:
    print(f"\n[mlxcompat] {state['doc']['cell']} {state['subject']}: {text}", flush=True)


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


@pytest.fixture(scope="session")
def subject_name(request: pytest.FixtureRequest) -> str:
    return request.config.stash[_KEY]["subject"]


@pytest.fixture(scope="session")
def tolerance(request: pytest.FixtureRequest) -> float:
    return float(request.config.getoption("--mlxcompat-tolerance"))


@pytest.fixture
def record(request: pytest.FixtureRequest) -> Callable[[CheckResult], None]:
    """Record a result in the cell JSON and turn its verdict into the pytest outcome."""
    state = request.config.stash[_KEY]

    def _record(result: CheckResult) -> None:
        state["doc"]["results"].append(result.to_json())
        _note(state, result)
        _save(request.config)
        if result.verdict == "skip":
            pytest.skip(result.detail)
        if result.verdict in ("fail", "error"):
            pytest.fail(f"{result.verdict}: {result.detail}", pytrace=False)

    if state.get("unavailable"):
        _record(_skipped_here(request, state["subject"], state["unavailable"]))
    return _record


def _skipped_here(request: pytest.FixtureRequest, subject: str, reason: str) -> CheckResult:
    """The skip verdict this test would have produced, for a subject that is not installed."""
    params = getattr(request.node, "callspec", None)
    params = params.params if params else {}
    check = request.node.originalname.removeprefix("test_").replace("_", "-")
    parts = [str(params[k]) for k in ("scenario", "path") if k in params]
    mode = params.get("mode") or "/".join(parts)
    model = params.get("model") or getattr(request.module, "MODEL", "")
    return CheckResult(check, "skip", mode, model, subject, detail=reason)


@pytest.fixture(scope="session")
def bench_profile(request: pytest.FixtureRequest) -> Any:
    from mlxcompat.bench import Profile

    raw = json.loads(request.config.getoption("--mlxcompat-bench"))
    return Profile(**{**raw, "batches": tuple(raw["batches"]), "models": tuple(raw["models"])})


@pytest.fixture(scope="session")
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.config.stash[_KEY]["doc"]["env"].get("backend", "cpu"))


@pytest.fixture
def record_bench(request: pytest.FixtureRequest) -> Callable[[dict[str, Any]], None]:
    """Append a throughput row to the cell JSON (written at once, like verdicts)."""
    state = request.config.stash[_KEY]

    def _record(row: dict[str, Any]) -> None:
        state["doc"]["bench"].append(row)
        _save(request.config)

    return _record


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize `patch_row` by this subject's patch rows, and bench tests by the profile."""
    if "patch_row" in metafunc.fixturenames:
        rows = metafunc.config.stash[_KEY]["doc"]["patches"]
        metafunc.parametrize("patch_row", rows, ids=[r["patch"] for r in rows])
    if {"bench_model", "batch"} <= set(metafunc.fixturenames):
        option = metafunc.config.getoption("--mlxcompat-bench")
        cases = []
        if option != "off":
            profile = json.loads(option)
            cases = [(m, b) for m in profile["models"] for b in profile["batches"]]
        metafunc.parametrize(("bench_model", "batch"), cases,
                             ids=[f"{m}-b{b}" for m, b in cases])


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect tests left out by --mlxcompat-models / -checks / -modes (a choice, not a skip)."""
    wanted = {m for m in config.getoption("--mlxcompat-models").split(",") if m}
    checks = {c for c in config.getoption("--mlxcompat-checks").split(",") if c}
    modes = {m for m in config.getoption("--mlxcompat-modes").split(",") if m}
    if not (wanted or checks or modes):
        return
    keep, drop = [], []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        model = (params.get("model") or params.get("bench_model")
                 or getattr(getattr(item, "module", None), "MODEL", None))
        check = getattr(item, "originalname", item.name).removeprefix("test_").replace("_", "-")
        mode = params.get("mode") or "/".join(
            str(params[k]) for k in ("scenario", "path") if k in params)
        out = (wanted and model and model not in wanted) or (checks and check not in checks) \
            or (modes and mode not in modes)
        (drop if out else keep).append(item)
    if drop:
        config.hook.pytest_deselected(items=drop)
        items[:] = keep


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash[_KEY]
    _flush_group(state)
    for row in state["doc"]["patches"]:
        _line(state, f"patch {row['patch']}: {row['status']} ({row['detail']})")
