"""`mlxcompat`: run the compat checks, report, probe, bisect, keep up with releases, init.

Every command works from `pip install mlxcompat` in any folder with a matrix.yaml; nothing
reads the harness's own source tree at run time.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import uuid
from importlib import metadata
from pathlib import Path

from mlxcompat.matrix import Matrix, MatrixError, load_matrix

VERSIONED = ("mlx", "mlx-lm", "mlx-vlm", "transformers")


def _pick(value: str, fallback: tuple[str, ...] | list[str], known: tuple[str, ...] | list[str],
          what: str) -> list[str]:
    """Comma-separated names, each one of `known`; a typo names every valid one."""
    names = [v for v in value.split(",") if v] if value else list(fallback)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MatrixError(f"unknown {what} {', '.join(unknown)}; valid: {', '.join(known)}")
    return names


def _installed() -> dict[str, str]:
    found = {}
    for name in VERSIONED:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def _reused(args: argparse.Namespace, out: Path, inputs: dict, subjects: list) -> dict:
    """Subjects whose inputs match the previous document's (only with --reuse)."""
    if not args.reuse or not out.exists():
        return {}
    try:
        old = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    if not old.get("complete") or (old.get("inputs") or {}).get("cell") != inputs["cell"]:
        return {}
    kept = {}
    for s in subjects:
        if (old["inputs"].get("subjects") or {}).get(s.name) != inputs["subjects"][s.name]:
            continue
        if any(r.get("check") == "run" and r.get("subject") == s.name for r in old["results"]):
            continue  # a subject that did not finish is never reused
        kept[s.name] = {key: [r for r in old.get(key, []) if r.get("subject") == s.name]
                        for key in ("results", "patches", "bench")}
        kept[s.name]["subject"] = old.get("subjects", {}).get(s.name, {})
        kept[s.name]["env"] = old.get("env", {})
    return kept


def cmd_run(args: argparse.Namespace, matrix: Matrix) -> int:
    """Run the compat checks here, one process per subject, and write one cell JSON."""
    from mlxcompat.inputs import digest, harness_hash, subject_inputs
    from mlxcompat.registry import CHECKS
    from mlxcompat.runner import RunOptions, run_cell

    base = args.cell.split("@")[0]
    cell = next((c for c in matrix.cells if c.id == base), None)
    reg = matrix.registry
    subjects = _pick(args.subjects, cell.subjects if cell else tuple(matrix.subjects),
                     tuple(matrix.subjects), "subject")
    models = _pick(args.models, cell.models if cell else tuple(reg.models), tuple(reg.models),
                   "model")
    runnable = [c for c in CHECKS if c not in ("upstream-suite", "run")]
    checks = _pick(args.checks, (), runnable, "check")
    modes_known = sorted({m for c in (checks or matrix.checks) for m in (reg.modes(c) or ())
                          if m})
    modes = _pick(args.modes, (), modes_known, "mode")
    install = None
    if args.install_json and Path(args.install_json).exists():
        install = json.loads(Path(args.install_json).read_text())
    backend = matrix.backend(args.backend)
    bench = matrix.bench_profile(args.bench)
    if bench is not None:
        bench["models"] = [m for m in bench["models"] if m in models
                           and (cell is None or not cell.bench_models or m in cell.bench_models)]
    out = Path(args.out or f"reports/raw/{args.cell}.json")
    specs = [matrix.subjects[s] for s in subjects]
    options = {"models": models, "checks": checks, "modes": modes, "bench": bench,
               "backend": backend.name, "tolerance": args.tolerance or matrix.settings["tolerance"]}
    inputs = (install or {}).get("inputs") or {
        "cell": digest({"packages": _installed(), "options": options,
                        "harness": harness_hash(), "label": args.cell}),
        "subjects": {s.name: digest(subject_inputs(s, matrix.source_dir())) for s in specs}}
    jobs = args.jobs or int(os.environ.get("MLXCOMPAT_JOBS", 0)) or os.cpu_count() or 1
    opts = RunOptions(
        cell=args.cell, out=out, matrix=matrix, subjects=specs, models=models,
        tolerance=float(options["tolerance"]),
        timeout_s=args.timeout or (cell.timeout_s if cell else matrix.settings["timeout_s"]),
        subject_dir=args.subject_dir, install=install, bench=bench, device=backend.device,
        force_cpu=tuple(matrix.settings["force_cpu_devices"]), checks=tuple(checks),
        modes=tuple(modes), jobs=jobs, pytest_args=tuple(args.pytest_args),
        run_id=args.run_id or os.environ.get("MLXCOMPAT_RUN_ID") or uuid.uuid4().hex[:12],
        inputs=inputs, reused=_reused(args, out, inputs, specs))
    if opts.reused:
        print(f"[mlxcompat] {args.cell}: reusing {', '.join(opts.reused)} (inputs unchanged)")
    doc = run_cell(opts)
    from mlxcompat.report.aggregate import summary_line

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
    run = sub.add_parser("run", help="run the compat checks in this environment")
    run.add_argument("--cell", default="local", help="cell id (a matrix cell picks its defaults)")
    run.add_argument("--out", default=None, help="cell JSON (default reports/raw/<cell>.json)")
    run.add_argument("--subjects", default="", help="comma list (default: the cell's)")
    run.add_argument("--models", default="", help="comma list (default: the cell's)")
    run.add_argument("--checks", default="", help="comma list of checks (default: all)")
    run.add_argument("--modes", default="", help="comma list of modes (default: all)")
    run.add_argument("--tolerance", type=float, default=None)
    run.add_argument("--timeout", type=float, default=None, help="seconds for the whole cell")
    run.add_argument("--subject-dir", type=Path, default=None,
                     help="folder with one sub-folder per installed subject")
    run.add_argument("--install-json", default=None, help="install record to embed")
    run.add_argument("--backend", default=None, help="cpu | metal | cuda (default: settings)")
    run.add_argument("--bench", default=None,
                     help="throughput profile: off, or one of settings.bench.profiles")
    run.add_argument("-j", "--jobs", type=int, default=0,
                     help="subject processes at once for the checks (default: cores; "
                     "MLXCOMPAT_JOBS); timed rounds always run alone")
    run.add_argument("--reuse", action="store_true",
                     help="keep the previous results of subjects whose inputs did not change")
    run.add_argument("--run-id", default="", help="recorded in the cell JSON")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
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
