"""Run the compat suite for one cell: one pytest process per subject, under one time budget.

A subject process that crashes or outlives the budget becomes an `error` result; whatever it
recorded before is kept (the plugin writes after every test). Nothing else is touched.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlxcompat.matrix import Matrix, SubjectSpec
from mlxcompat.results import VERDICTS, empty_cell, write_json_atomic


@dataclass
class RunOptions:
    cell: str
    out: Path
    subjects: list[SubjectSpec]
    models: list[str]
    tolerance: float
    timeout_s: float
    tests: Path
    subject_dir: Path | None = None
    install: dict[str, Any] | None = None
    bench: dict[str, Any] | None = None
    device: str = "cpu"
    force_cpu: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    pytest_args: tuple[str, ...] = ()


def _error(subject: str, detail: str, **metrics: Any) -> dict[str, Any]:
    return {"check": "run", "verdict": "error", "mode": "", "model": "", "subject": subject,
            "expected": None, "metrics": metrics, "seconds": 0.0, "detail": detail}


def _command(opts: RunOptions, subject: SubjectSpec, part: Path) -> list[str]:
    return [
        sys.executable, "-m", "pytest", str(opts.tests), "-p", "mlxcompat.plugin",
        "-p", "no:cacheprovider", "-q", "-s", "--no-header", "-rN",
        f"--mlxcompat-subject={subject.name}",
        f"--mlxcompat-entry-points={json.dumps(subject.entry_points)}",
        f"--mlxcompat-out={part}", f"--mlxcompat-cell={opts.cell}",
        f"--mlxcompat-tolerance={opts.tolerance}", f"--mlxcompat-models={','.join(opts.models)}",
        f"--mlxcompat-bench={json.dumps(opts.bench) if opts.bench else 'off'}",
        f"--mlxcompat-checks={','.join(opts.checks)}", f"--mlxcompat-modes={','.join(opts.modes)}",
        f"--mlxcompat-device={opts.device}", f"--mlxcompat-force-cpu={','.join(opts.force_cpu)}",
        *([f"--benchmark-json={_bench_part(part)}"] if opts.bench else []),
        *opts.pytest_args,
    ]


def _bench_part(part: Path) -> Path:
    return part.with_name(part.stem + ".bench.json")


def _env(opts: RunOptions, subject: SubjectSpec) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    # float32 means float32: MLX runs fp32 matmuls as TF32 on CUDA (and M5 Metal) unless
    # told not to, which alone moves batched vs single by ~1e-3 (ml-explore/mlx#3860).
    env.setdefault("MLX_ENABLE_TF32", "0")
    if subject.install and opts.subject_dir is not None:
        extra = str(opts.subject_dir / subject.name)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra, env.get("PYTHONPATH")) if p)
    return env


def _echo_progress(stream: Any, tail: deque[str]) -> None:
    for line in stream:
        if line.startswith("[mlxcompat]"):
            print(line.rstrip("\n"), flush=True)
        elif line.strip():
            tail.append(line.strip())


def run_subject(opts: RunOptions, subject: SubjectSpec, part: Path, budget: float,
                tail: deque[str] | None = None) -> int | None:
    """Run one subject's pytest process, echoing progress lines; None when it timed out.

    Other output lines are kept in `tail`, so a process that dies early can say why.
    """
    proc = subprocess.Popen(
        _command(opts, subject, part), env=_env(opts, subject), stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )
    tail = tail if tail is not None else deque(maxlen=20)
    reader = threading.Thread(target=_echo_progress, args=(proc.stdout, tail), daemon=True)
    reader.start()
    try:
        code: int | None = proc.wait(timeout=budget)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        code = None
    reader.join(timeout=5)
    return code


def _last_error(lines: list[str]) -> str:
    """The line of a dead process's output that names the error, if any."""
    for line in reversed(lines):
        if "Error" in line or "error" in line:
            return line.removeprefix("E ").strip()[:300]
    return lines[-1][:300] if lines else ""


def merge_parts(cell: str, parts: list[tuple[str, int | None, dict[str, Any] | None]],
                budget: float = 0.0, tails: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """One cell document from the per-subject documents; crashes and timeouts become errors."""
    doc = empty_cell(cell)
    for subject, code, part in parts:
        if part is not None:
            doc["env"] = doc["env"] or part.get("env", {})
            for key in ("results", "patches", "bench"):
                doc[key] += part.get(key, [])
        if code is None:
            doc["results"].append(_error(
                subject, f"timed out: the cell's {budget:.0f}s budget ran out in this subject",
                timeout_s=budget))
        elif code < 0:
            kept = "; results before it kept" if part else " before writing any result"
            doc["results"].append(_error(
                subject, f"subject process killed by signal {-code}{kept}", returncode=code))
        elif part is None:
            why = _last_error((tails or {}).get(subject, []))
            doc["results"].append(_error(
                subject, f"subject process exited with {code} before writing any result"
                + (f": {why}" if why else ""), returncode=code))
    return doc


def annotate_expectations(doc: dict[str, Any], matrix: Matrix) -> None:
    """Fill each result's `expected` from matrix.yaml (the report re-derives it too)."""
    packages = doc.get("env", {}).get("packages", {})
    for result in doc["results"]:
        exp = matrix.expectation_for(result, doc["cell"], packages)
        result["expected"] = exp.verdict if exp else None


def run_cell(opts: RunOptions, matrix: Matrix | None = None) -> dict[str, Any]:
    """Run every subject of the cell and write its JSON atomically; returns the document."""
    parts: list[tuple[str, int | None, dict[str, Any] | None]] = []
    benchmarks: dict[str, Any] = {}
    tails: dict[str, list[str]] = {}
    deadline = time.monotonic() + opts.timeout_s
    with tempfile.TemporaryDirectory(prefix="mlxcompat-") as tmp:
        for subject in opts.subjects:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                parts.append((subject.name, None, None))
                continue
            part = Path(tmp) / f"{subject.name}.json"
            print(f"[mlxcompat] {opts.cell} {subject.name}: starting", flush=True)
            start = time.monotonic()
            tail: deque[str] = deque(maxlen=20)
            code = run_subject(opts, subject, part, remaining, tail)
            tails[subject.name] = list(tail)
            doc = json.loads(part.read_text()) if part.exists() else None
            parts.append((subject.name, code, doc))
            if _bench_part(part).exists():
                benchmarks[subject.name] = json.loads(_bench_part(part).read_text())
            print(f"[mlxcompat] {opts.cell} {subject.name}: done in "
                  f"{time.monotonic() - start:.1f}s", flush=True)
    cell = merge_parts(opts.cell, parts, opts.timeout_s, tails)
    if cell["bench"]:
        from mlxcompat.bench import add_overhead

        add_overhead(cell["bench"])
    if benchmarks:
        write_json_atomic(opts.out.with_name(f"{opts.cell}.bench.json"),
                          {"cell": opts.cell, "profile": opts.bench, "subjects": benchmarks})
    if opts.install:
        cell["install"] = opts.install
    if matrix is not None:
        annotate_expectations(cell, matrix)
    write_json_atomic(opts.out, cell)
    return cell


def summary_line(doc: dict[str, Any]) -> str:
    counts = Counter(r["verdict"] for r in doc["results"])
    return f"{doc['cell']}: " + " ".join(f"{v}={counts.get(v, 0)}" for v in VERDICTS)
