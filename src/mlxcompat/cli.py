"""`mlxcompat run | list`: thin wrappers around the compat pytest suite and the registries."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from mlxcompat.results import empty_cell, write_json_atomic

DEFAULT_SUBJECTS = ("none", "mlxcompat", "vllm-mlx", "vllm-mlx-legacy")


def compat_tests_dir() -> Path:
    """tests/compat of this checkout (editable install) or of the current directory."""
    here = Path(__file__).resolve().parents[2] / "tests" / "compat"
    return here if here.is_dir() else Path.cwd() / "tests" / "compat"


def _run_subject(subject: str, args: argparse.Namespace, part: Path) -> tuple[int, float]:
    cmd = [
        sys.executable, "-m", "pytest", str(args.tests), "-p", "mlxcompat.plugin",
        "-p", "no:cacheprovider", "-q", "-rN", "--no-header",
        f"--mlxcompat-subject={subject}", f"--mlxcompat-out={part}",
        f"--mlxcompat-cell={args.cell}", f"--mlxcompat-tolerance={args.tolerance}",
    ]
    if args.models:
        cmd.append(f"--mlxcompat-models={args.models}")
    cmd += args.pytest_args
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("[mlxcompat]"):
            print(line, flush=True)
    return proc.returncode, time.perf_counter() - start


def _crash_result(subject: str, code: int) -> dict[str, Any]:
    how = f"signal {-code}" if code < 0 else f"exit code {code}"
    return {"check": "run", "verdict": "error", "mode": "", "model": "", "subject": subject,
            "expected": None, "metrics": {"returncode": code}, "seconds": 0.0,
            "detail": f"subject process ended abnormally ({how}) before writing any result"}


def merge_parts(cell: str, parts: list[tuple[str, int, dict[str, Any] | None]]) -> dict[str, Any]:
    """One cell document from the per-subject documents (crashed subjects become errors)."""
    doc = empty_cell(cell)
    for subject, code, part in parts:
        if part is None:
            doc["results"].append(_crash_result(subject, code))
            continue
        doc["env"] = doc["env"] or part.get("env", {})
        doc["results"] += part.get("results", [])
        doc["patches"] += part.get("patches", [])
        doc["bench"] += part.get("bench", [])
        if code < 0:
            doc["results"].append(_crash_result(subject, code) | {
                "detail": f"subject process killed by signal {-code}; results before it kept"})
    return doc


def cmd_run(args: argparse.Namespace) -> int:
    """Run the compat suite once per subject (own process each) and write one cell JSON."""
    import json

    out = Path(args.out)
    parts = []
    with tempfile.TemporaryDirectory(prefix="mlxcompat-") as tmp:
        for subject in args.subjects.split(","):
            part = Path(tmp) / f"{subject}.json"
            print(f"[mlxcompat] {args.cell}: subject {subject} ...", flush=True)
            code, seconds = _run_subject(subject, args, part)
            doc = json.loads(part.read_text()) if part.exists() else None
            parts.append((subject, code, doc))
            print(f"[mlxcompat] {args.cell}: subject {subject} done in {seconds:.1f}s", flush=True)
    cell = merge_parts(args.cell, parts)
    if args.install_json and Path(args.install_json).exists():
        cell["install"] = json.loads(Path(args.install_json).read_text())
    write_json_atomic(out, cell)
    counts = Counter(r["verdict"] for r in cell["results"])
    summary = " ".join(f"{v}={counts.get(v, 0)}" for v in ("pass", "fail", "error", "skip"))
    print(f"[mlxcompat] {args.cell}: {summary} -> {out}", flush=True)
    return 0


def cmd_list(_: argparse.Namespace) -> int:
    from mlxcompat.checks.glm4v import GLM4V_PATHS, GLM4V_SCENARIOS
    from mlxcompat.checks.parity import MODES
    from mlxcompat.models import MODELS
    from mlxcompat.subjects import BUILTIN_SUBJECTS

    print("models:   " + ", ".join(MODELS))
    print("modes:    " + ", ".join(MODES))
    print("glm4v:    " + ", ".join(f"{s}/{p}" for s in GLM4V_SCENARIOS for p in GLM4V_PATHS))
    print("subjects: " + ", ".join(BUILTIN_SUBJECTS))
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlxcompat", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run the compat checks in this environment")
    run.add_argument("--out", default="reports/raw/local.json", help="cell JSON to write")
    run.add_argument("--cell", default="local", help="cell id recorded in the JSON")
    run.add_argument("--subjects", default=",".join(DEFAULT_SUBJECTS))
    run.add_argument("--models", default="", help="comma list (default: all)")
    run.add_argument("--tolerance", type=float, default=1e-4)
    run.add_argument("--tests", type=Path, default=compat_tests_dir())
    run.add_argument("--install-json", default=None, help="install record to embed")
    run.add_argument("pytest_args", nargs="*", help="extra pytest arguments (after --)")
    run.set_defaults(func=cmd_run)
    sub.add_parser("list", help="list models, modes and subjects").set_defaults(func=cmd_list)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
