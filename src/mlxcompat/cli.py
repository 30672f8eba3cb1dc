"""`mlxcompat run | list`: thin wrappers around the compat pytest suite and matrix.yaml."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from packaging.version import Version

from mlxcompat.matrix import Matrix, MatrixError, load_matrix

ROOT = Path(__file__).resolve().parents[2]


def _default(name: str) -> Path:
    """A file of this checkout (editable install), else of the current directory."""
    here = ROOT / name
    return here if here.exists() else Path.cwd() / name


def _pick(value: str, fallback: tuple[str, ...], known: dict | tuple, what: str) -> list[str]:
    names = [v for v in value.split(",") if v] if value else list(fallback)
    unknown = [n for n in names if n not in known]
    if unknown:
        raise MatrixError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
    return names


def cmd_run(args: argparse.Namespace, matrix: Matrix) -> int:
    """Run the compat checks here, one process per subject, and write one cell JSON."""
    from mlxcompat.matrix import KNOWN_MODELS
    from mlxcompat.runner import RunOptions, run_cell, summary_line

    cell = next((c for c in matrix.cells if c.id == args.cell.split("@")[0]), None)
    subjects = _pick(args.subjects, cell.subjects if cell else tuple(matrix.subjects),
                     matrix.subjects, "subject")
    models = _pick(args.models, cell.models if cell else KNOWN_MODELS, KNOWN_MODELS, "model")
    install = None
    if args.install_json and Path(args.install_json).exists():
        install = json.loads(Path(args.install_json).read_text())
    opts = RunOptions(
        cell=args.cell, out=Path(args.out or f"reports/raw/{args.cell}.json"),
        subjects=[matrix.subjects[s] for s in subjects], models=models,
        tolerance=args.tolerance or float(matrix.settings["tolerance"]),
        timeout_s=args.timeout or (cell.timeout_s if cell else matrix.settings["timeout_s"]),
        tests=args.tests, subject_dir=args.subject_dir, install=install,
        bench=matrix.bench_profile(args.bench), pytest_args=tuple(args.pytest_args),
        device=matrix.backend(args.backend).device,
        force_cpu=tuple(matrix.settings["force_cpu_devices"]),
        checks=tuple(c for c in args.checks.split(",") if c),
        modes=tuple(m for m in args.modes.split(",") if m),
    )
    doc = run_cell(opts, matrix)
    print(f"[mlxcompat] {summary_line(doc)} -> {opts.out}", flush=True)
    return 0


def cmd_report(args: argparse.Namespace, matrix: Matrix) -> int:
    """Aggregate reports/raw into compat.{json,md,html}; non-zero only for what is new."""
    from mlxcompat.report.build import ReportPaths, build_report
    from mlxcompat.report.load import load_cells
    from mlxcompat.runner import summary_line

    paths = ReportPaths.under(args.raw, args.out)
    for doc in load_cells(args.raw).cells:
        install = doc.get("install", {})
        took = f" {install['seconds']}s" if install.get("seconds") is not None else ""
        print(f"[mlxcompat] {summary_line(doc)} | install {install.get('status', '?')}{took}")
    code, line = build_report(paths, matrix, accept=args.accept, html=not args.no_html)
    if args.screenshot and not args.no_html:
        from mlxcompat.report.browser import find_browser, screenshot

        if find_browser() is None:
            print("mlxcompat report: no Chromium found; compat.png not made", file=sys.stderr)
        else:
            screenshot(paths.out / "compat.html", paths.out / "compat.png")
    print(line)
    return code


def cmd_probe(args: argparse.Namespace, matrix: Matrix) -> int:
    """Static API-drift table of every release in the matrix (no model runs)."""
    from mlxcompat.probe import probe_matrix

    doc = probe_matrix(matrix, args.cache, args.out)
    failed = [r["cell"] for r in doc["rows"] if "error" in r]
    print(f"[mlxcompat] probe: {len(doc['rows'])} releases -> {args.out}"
          + (f"; unreadable: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def cmd_bisect(args: argparse.Namespace, matrix: Matrix) -> int:
    """Binary search over mlx-lm releases for the first one whose verdict changes."""
    from mlxcompat.bisect import Bisect, run_bisect
    from mlxcompat.results import write_json_atomic

    if args.subject not in matrix.subjects:
        raise MatrixError(f"unknown subject {args.subject}; known: {', '.join(matrix.subjects)}")
    work = args.work or Path(".nox") / f"bisect-{args.check}-{args.model}-{args.mode}"
    b = Bisect(matrix, args.check, args.model, args.mode, args.subject, work.resolve(), ROOT)
    result = run_bisect(b, args.between[0], args.between[1], args.wheels)
    write_json_atomic(work / "result.json", result)
    print(f"[bisect] {args.check} {args.model} {args.mode} subject {args.subject}: "
          f"{len(result['visited'])} of {len(result['candidates'])} releases visited "
          f"in {result['seconds']}s")
    for version, seen in sorted(result["visited"].items(), key=lambda kv: Version(kv[0])):
        print(f"[bisect]   {version:>8}  {seen['verdict']}  {seen['detail'][:100]}")
    if result["boundary"]:
        print(f"[bisect] boundary: {result['last_same']} -> {result['boundary']} "
              f"(first release whose verdict differs from {result['candidates'][0]}'s)")
    else:
        print("[bisect] no change: both bounds give the same verdict")
    return 0


def cmd_list(_: argparse.Namespace, matrix: Matrix) -> int:
    for c in matrix.cells:
        pins = " ".join(f"{k}=={v}" for k, v in c.pins.items())
        tags = f" [{', '.join(c.tags)}]" if c.tags else ""
        print(f"{c.id:<16} {pins}{tags}")
    print("subjects: " + ", ".join(matrix.subjects))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlxcompat", description=__doc__)
    parser.add_argument("--matrix", type=Path, default=_default("matrix.yaml"))
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the compat checks in this environment")
    run.add_argument("--cell", default="local", help="cell id (a matrix cell picks its defaults)")
    run.add_argument("--out", default=None, help="cell JSON (default reports/raw/<cell>.json)")
    run.add_argument("--subjects", default="", help="comma list (default: the cell's)")
    run.add_argument("--models", default="", help="comma list (default: the cell's)")
    run.add_argument("--tolerance", type=float, default=None)
    run.add_argument("--timeout", type=float, default=None, help="seconds for the whole cell")
    run.add_argument("--tests", type=Path, default=_default("tests/compat"))
    run.add_argument("--subject-dir", type=Path, default=None,
                     help="folder with one sub-folder per installed subject")
    run.add_argument("--install-json", default=None, help="install record to embed")
    run.add_argument("--backend", default=None, help="cpu | metal | cuda (default: settings)")
    run.add_argument("--checks", default="", help="comma list of checks (default: all)")
    run.add_argument("--modes", default="", help="comma list of modes (default: all)")
    run.add_argument("--bench", default=None,
                     help="throughput profile: off, or one of settings.bench.profiles")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    run.set_defaults(func=cmd_run)
    report = sub.add_parser("report", help="aggregate reports/raw/*.json")
    report.add_argument("--raw", type=Path, default=Path("reports/raw"))
    report.add_argument("--out", type=Path, default=None, help="default: the folder above --raw")
    report.add_argument("--accept", action="store_true", help="promote this report to baseline")
    report.add_argument("--no-html", action="store_true", help="skip compat.html (no jinja2)")
    report.add_argument("--screenshot", action="store_true",
                        help="also compat.png of the page (headless Chromium)")
    report.set_defaults(func=cmd_report)
    probe = sub.add_parser("probe", help="static API-drift table of every matrix release")
    probe.add_argument("--cache", type=Path, default=Path(".nox/wheels"), help="wheel cache")
    probe.add_argument("--out", type=Path, default=Path("reports/probe.json"))
    probe.set_defaults(func=cmd_probe)
    bisect = sub.add_parser("bisect", help="first mlx-lm release where a verdict changes")
    bisect.add_argument("--check", required=True)
    bisect.add_argument("--model", required=True)
    bisect.add_argument("--mode", default="", help="mode as recorded (e.g. history)")
    bisect.add_argument("--subject", default="none")
    bisect.add_argument("--between", nargs=2, required=True, metavar=("LOW", "HIGH"))
    bisect.add_argument("--work", type=Path, default=None, help="scratch folder")
    bisect.add_argument("--wheels", type=Path, default=Path(".nox/wheels"))
    bisect.set_defaults(func=cmd_bisect)
    sub.add_parser("list", help="list cells and subjects").set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args, load_matrix(args.matrix)))
    except MatrixError as exc:
        print(f"mlxcompat: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
