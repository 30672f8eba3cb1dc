"""`mlxcompat`: run the compat checks, report, drift scan, bisect, keep up with releases, init.

Every command works from `pip install mlxcompat` in any folder with a matrix.yaml; nothing
reads the harness's own source tree at run time.
"""

from __future__ import annotations

import argparse
import os
import sys
import uuid
from importlib import metadata
from pathlib import Path

from mlxcompat.matrix import Matrix, MatrixError, load_matrix
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.names import split_cell_name
from mlxcompat.spec import CellRun, RunOptions

VERSIONED = ("mlx", "mlx-lm", "mlx-vlm", "transformers")


def _installed() -> dict[str, str]:
    found = {}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _previous(out: Path) -> CellDoc | None:
    """The last complete document of this cell, if it can be read (for --reuse)."""
    from mlxcompat.records.base import RecordError
    from mlxcompat.records.cell import read_cell

    try:
        return read_cell(out) if out.exists() else None
    except RecordError:
        return None


def options_for(run: CellRun, matrix: Matrix) -> RunOptions:
    """The cell run with its matrix objects resolved (subjects, bench profile, device)."""
    from mlxcompat.inputs import reused_subjects

    cell = next((c for c in matrix.cells if c.id == run.cell), None)
    profile = matrix.bench_profile(run.bench) if run.bench != "off" else None
    if profile is not None:
        narrowed = [m for m in profile.models if m in run.models
                    and (cell is None or not cell.bench_models or m in cell.bench_models)]
        profile = profile.model_copy(update={"models": tuple(narrowed)})
    previous = _previous(Path(run.out)) if run.reuse else None
    return RunOptions(run=run, matrix=matrix, subjects=[matrix.subjects[s] for s in run.subjects],
                      bench=profile, device=matrix.backend(run.backend).device,
                      force_cpu=matrix.settings.force_cpu_devices, previous=previous,
                      reused=reused_subjects(previous, run.inputs))


def cmd_run(args: argparse.Namespace, matrix: Matrix) -> int:
    """Run the compat checks here, one process per subject, and write one cell JSON."""
    from mlxcompat.report.aggregate import summary_line
    from mlxcompat.runner import run_cell
    from mlxcompat.runplan import plan

    if args.cell_run:
        run = CellRun.read(args.cell_run)
    else:
        run_id = args.run_id or os.environ.get("MLXCOMPAT_RUN_ID") or uuid.uuid4().hex[:12]
        cell, label = split_cell_name(args.cell)
        run = plan(matrix, cell, args, label=label, backend=args.backend, run_id=run_id,
                   out=Path(args.out or f"reports/raw/{args.cell}.json"), pins=_installed(),
                   subject_dir=args.subject_dir)
    opts = options_for(run, matrix)
    if opts.reused:
        print(f"[mlxcompat] {run.name}: reusing {', '.join(opts.reused)} (inputs unchanged)")
    try:
        doc = run_cell(opts)
    except KeyboardInterrupt:  # run_cell has stopped every process it started
        print(f"[mlxcompat] {run.name}: interrupted; its subject processes were stopped and "
              f"no results were written ({opts.out} is absent)", file=sys.stderr, flush=True)
        return 130
    print(f"[mlxcompat] {summary_line(doc)} -> {opts.out}", flush=True)
    return 0


def cmd_list(_: argparse.Namespace, matrix: Matrix) -> int:
    for c in matrix.cells:
        pins = " ".join(f"{k}=={v}" for k, v in c.pins.items()) or f"resolved: {c.resolve}"
        tags = f" [{', '.join(c.tags)}]" if c.tags else ""
        print(f"{c.id:<28} {pins}{tags}")
    print("subjects: " + ", ".join(matrix.subjects))
    print("models:   " + ", ".join(matrix.registry.models))
    print("roles:    " + ", ".join(matrix.registry.roles))
    return 0


def _add_run(sub: argparse._SubParsersAction) -> None:
    from mlxcompat.runplan import add_selection

    run = sub.add_parser("run", help="run the compat checks in this environment")
    run.add_argument("--cell", default="local",
                     help="cell id, or <cell>@<label> for another runner (a matrix cell picks "
                     "its defaults)")
    run.add_argument("--cell-run", type=Path, default=None,
                     help="a CellRun record written by nox (replaces every other option)")
    run.add_argument("--out", default=None, help="cell JSON (default reports/raw/<cell>.json)")
    run.add_argument("--backend", default=None, help="cpu | metal | cuda (default: settings)")
    run.add_argument("--run-id", default="", help="recorded in the cell JSON")
    run.add_argument("--subject-dir", default="",
                     help="folder with one sub-folder per subject installed --no-deps")
    add_selection(run)
    run.set_defaults(func=cmd_run)


def build_parser() -> argparse.ArgumentParser:
    from mlxcompat.commands import add_commands

    parser = argparse.ArgumentParser(prog="mlxcompat", description=__doc__)
    parser.add_argument("--matrix", type=Path, default=Path("matrix.yaml"),
                        help="the matrix file (default: ./matrix.yaml)")
    sub = parser.add_subparsers(dest="command", required=True)
    _add_run(sub)
    add_commands(sub)
    sub.add_parser("list", help="list cells, subjects, models and roles").set_defaults(
        func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if getattr(args, "no_matrix", False):
            return int(args.func(args))
        return int(args.func(args, load_matrix(args.matrix)))
    except MatrixError as exc:
        print(f"mlxcompat: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
