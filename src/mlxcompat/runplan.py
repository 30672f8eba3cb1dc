"""One cell run, planned once: what `nox -s matrix` writes as a `CellRun` and what `mlxcompat
run` reads (or plans itself outside nox, from the releases installed here).

The options of a run (`--subjects`, `--checks`, `--modes`, `--bench`, …) are parsed by one
parser for both; the inputs digest and the reuse rule live in `mlxcompat.inputs`.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from mlxcompat.inputs import cell_inputs
from mlxcompat.installs import harness_identity
from mlxcompat.matrix import Cell, Matrix, MatrixError
from mlxcompat.records.cell import InstallRecord
from mlxcompat.spec import CellRun

# `--modes` etc.: the keys a run can be narrowed by (each filters the checks that have it).
FILTERS = {"modes": "mode", "roles": "role", "scenarios": "scenario", "paths": "path",
           "dtypes": "dtype"}


def add_selection(run: argparse.ArgumentParser) -> None:
    """The options that choose what a cell run covers (they are part of its inputs)."""
    run.add_argument("--subjects", default="", help="comma list (default: the cell's)")
    run.add_argument("--models", default="", help="comma list (default: the cell's)")
    run.add_argument("--checks", default="", help="comma list of checks (default: all)")
    for flag, key in FILTERS.items():
        run.add_argument(f"--{flag}", default="",
                         help=f"comma list of {key}s (filters only the checks that have one)")
    run.add_argument("--tolerance", type=float, default=None)
    run.add_argument("--bench", default=None,
                     help="throughput profile: off, or one of settings.bench.profiles")
    run.add_argument("--timeout", type=float, default=None, help="seconds for the whole cell")
    run.add_argument("-j", "--jobs", type=int, default=0,
                     help="subject processes at once for the checks (default: cores; "
                     "MLXCOMPAT_JOBS); timed rounds always run alone")
    run.add_argument("--reuse", action="store_true",
                     help="keep the previous results of subjects whose inputs did not change")
    run.add_argument("--no-share", action="store_true",
                     help="run every release of a family, even those whose entry points' "
                     "modules are byte-identical to another's, and every subject's behaviour "
                     "checks, even where its entry points changed nothing")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")


def selection_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlxcompat run", add_help=False)
    add_selection(parser)
    return parser


def pick(value: str, fallback: tuple[str, ...] | list[str], known: tuple[str, ...] | list[str],
         what: str) -> list[str]:
    """Comma-separated names, each one of `known`; a typo names every valid one."""
    names = [v for v in value.split(",") if v] if value else list(fallback)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MatrixError(f"unknown {what} {', '.join(unknown)}; valid: {', '.join(known)}")
    return names


def _only(args: argparse.Namespace, matrix: Matrix) -> dict[str, list[str]]:
    from mlxcompat.checks.catalog import CATALOG

    only = {}
    for flag, key in FILTERS.items():
        given = getattr(args, flag)
        if not given:
            continue
        known = sorted({v for spec in CATALOG.values()
                        for v in (spec.values(matrix.registry).get(key) or ())})
        only[key] = pick(given, (), known, key)
    return only


def plan(matrix: Matrix, cell_id: str, args: argparse.Namespace, *, label: str = "",
         backend: str | None = None, out: Path, pins: dict[str, str], run_id: str,
         install: InstallRecord | None = None, subject_dir: str = "",
         sources: dict[str, str] | None = None,
         same_as: dict[str, str] | None = None) -> CellRun:
    """The cell run these options ask for; `pins` are the releases it runs (pinned, resolved,
    or what is installed here) and `sources` the commit or tree of each package built from
    source, both part of its inputs; `same_as`: subjects that share another's run."""
    from mlxcompat.checks.catalog import selectable

    cell: Cell | None = next((c for c in matrix.cells if c.id == cell_id), None)
    reg = matrix.registry
    subjects = pick(args.subjects, cell.subjects if cell else tuple(matrix.subjects),
                    tuple(matrix.subjects), "subject")
    models = pick(args.models, cell.models if cell else tuple(reg.models), tuple(reg.models),
                  "model")
    checks = pick(args.checks, (), selectable(), "check")
    if not checks and cell is not None and cell.extra_checks:
        checks = list(matrix.run_checks(cell))
    profile = matrix.bench_profile(args.bench or (cell.bench if cell else None) or None)
    chosen = matrix.backend(backend)
    selection: dict[str, Any] = {
        "subjects": subjects, "models": models, "checks": checks, "only": _only(args, matrix),
        "bench": profile.name if profile else "off",
        "tolerance": float(args.tolerance or matrix.settings.tolerance)}
    specs = [matrix.subjects[s] for s in subjects]
    inputs = cell_inputs(pins, chosen.name, label, selection, specs, matrix.source_dir(),
                         sources)
    jobs = args.jobs or int(os.environ.get("MLXCOMPAT_JOBS", 0)) or os.cpu_count() or 1
    timeout = args.timeout or (cell.timeout_s if cell else matrix.settings.timeout_s)
    return CellRun(cell=cell_id, label=label, out=str(out), backend=chosen.name, run_id=run_id,
                   timeout_s=timeout, jobs=jobs, subject_dir=subject_dir, install=install,
                   inputs=inputs, reuse=bool(args.reuse), pytest_args=list(args.pytest_args),
                   harness=harness_identity(),
                   same_as={k: v for k, v in (same_as or {}).items()
                            if k in subjects and v in subjects and not args.no_share},
                   borrow=not args.no_share,
                   **selection)
