"""Run one cell: a clean-process probe, then one long-lived pytest process per subject.

Correctness runs up to `jobs` subject processes at a time; a process that has finished its
checks waits at the turn gate, and once every live process waits, the timed rounds are
granted one at a time in rotating order (see `mlxcompat.gate`). The whole cell runs under one
time budget. Nothing fails silently: a process that crashes, exits with anything but 0/1,
runs out of time or records fewer rows than it collected adds an `error` row naming why,
with the tail of its output; whatever it recorded before is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat.matrix import Matrix, SubjectSpec
from mlxcompat.merge import merge_cell
from mlxcompat.results import write_json_atomic
from mlxcompat.spec import SubjectRun


@dataclass
class RunOptions:
    cell: str
    out: Path
    matrix: Matrix
    subjects: list[SubjectSpec]
    models: list[str]
    tolerance: float
    timeout_s: float
    subject_dir: Path | None = None
    install: dict[str, Any] | None = None
    bench: dict[str, Any] | None = None
    device: str = "cpu"
    force_cpu: tuple[str, ...] = ()
    checks: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    jobs: int = 1
    probe: bool = True
    pytest_args: tuple[str, ...] = ()
    run_id: str = ""
    inputs: dict[str, Any] = field(default_factory=dict)
    reused: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class Worker:
    """One subject process and what the runner knows of it."""

    name: str
    proc: subprocess.Popen[str]
    part: Path
    tail: deque[str]
    to_worker: Any = None
    waiting: str = ""
    code: int | None = None
    timed_out: bool = False
    exited: bool = False
    started: float = field(default_factory=time.monotonic)


def _env(opts: RunOptions, subject: SubjectSpec | None) -> dict[str, str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    # float32 means float32: MLX runs fp32 matmuls as TF32 on CUDA (and M5 Metal) unless
    # told not to, which alone moves batched vs single by ~1e-3 (ml-explore/mlx#3860).
    env.setdefault("MLX_ENABLE_TF32", "0")
    if subject is not None and subject.requirements and opts.subject_dir is not None:
        extra = str(opts.subject_dir / subject.name)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (extra, env.get("PYTHONPATH")) if p)
    return env


def _spec(opts: RunOptions, subject: SubjectSpec, part: Path, probe: Path | None,
          gate: list[int]) -> SubjectRun:
    status = (opts.install or {}).get("subjects", {}).get(subject.name, "ok")
    return SubjectRun.with_registry(
        opts.matrix.registry, cell=opts.cell, subject=subject.name, out=str(part),
        entry_points=dict(subject.entry_points), models=list(opts.models),
        checks=list(opts.checks or ("install", "import", *opts.matrix.checks)),
        modes=list(opts.modes),
        tolerance=opts.tolerance, device=opts.device, force_cpu=list(opts.force_cpu),
        bench=opts.bench, probe=str(probe) if probe else "", installs=bool(subject.install),
        install_error="" if status == "ok" else str(status), gate=gate,
        bench_cpu=bench_cpu())


def bench_cpu() -> int | None:
    """The one CPU every worker of a cell runs its timed rounds on (None off Linux)."""
    if os.environ.get("MLXCOMPAT_BENCH_PIN", "1") == "0" or not hasattr(os, "sched_getaffinity"):
        return None
    return max(os.sched_getaffinity(0))


def _pump(stream: Any, worker: str, events: queue.Queue[tuple[str, str, str]],
          kind: str) -> None:
    for line in stream:
        events.put((kind, worker, line.rstrip("\n")))
    if kind == "out":
        events.put(("eof", worker, ""))


def _start(opts: RunOptions, subject: SubjectSpec, tmp: Path, probe: Path | None,
           events: queue.Queue[tuple[str, str, str]]) -> Worker:
    part = tmp / f"{subject.name}.json"
    gate: list[int] = []
    mine: tuple[int, int] | None = None
    if opts.bench:
        r2w_read, r2w_write = os.pipe()  # runner -> worker: "go"
        w2r_read, w2r_write = os.pipe()  # worker -> runner: "want" / "done"
        gate = [r2w_read, w2r_write]
        mine = (r2w_write, w2r_read)
    spec_path = _spec(opts, subject, part, probe, gate).write(tmp / f"{subject.name}.spec.json")
    cmd = [sys.executable, "-m", "pytest", "--pyargs", "mlxcompat.suite",
           "-c", str(Path(__file__).parent / "suite" / "pytest.ini"), f"--rootdir={tmp}",
           "-p", "mlxcompat.plugin", f"--mlxcompat-run={spec_path}", "-p", "no:cacheprovider",
           "-q", "-s",
           "--no-header", "-rN", "--benchmark-disable-gc",
           *([f"--benchmark-json={part.with_suffix('.bench.json')}"] if opts.bench else
             ["--benchmark-disable"]), *opts.pytest_args]
    proc = subprocess.Popen(cmd, env=_env(opts, subject), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            pass_fds=tuple(gate))
    worker = Worker(subject.name, proc, part, deque(maxlen=30))
    threading.Thread(target=_pump, args=(proc.stdout, subject.name, events, "out"),
                     daemon=True).start()
    if mine is not None:
        os.close(gate[0])
        os.close(gate[1])
        worker.to_worker = os.fdopen(mine[0], "w")
        threading.Thread(target=_pump, args=(os.fdopen(mine[1]), subject.name, events, "gate"),
                         daemon=True).start()
    print(f"[mlxcompat] {opts.cell} {subject.name}: starting", flush=True)
    return worker


def _start_probe(opts: RunOptions, tmp: Path) -> tuple[subprocess.Popen[str], Path]:
    out = tmp / "capabilities.json"
    cmd = [sys.executable, "-m", "mlxcompat.drivers.need", str(out), opts.device,
           ",".join(opts.force_cpu)]
    proc = subprocess.Popen(cmd, env=_env(opts, None), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    return proc, out


def _kill(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


class _Turns:
    """The coordinator side of the gate: one turn at a time, in rotating order."""

    def __init__(self) -> None:
        self.cycle: list[Worker] = []
        self.current: Worker | None = None
        self.turn = 0

    def grant(self, workers: list[Worker], correctness_running: bool) -> None:
        if self.current is not None or correctness_running:
            return
        live = [w for w in workers if not w.exited]
        if not self.cycle:
            if not live or any(not w.waiting for w in live):
                return
            k = self.turn % len(live)
            self.cycle = live[k:] + live[:k]
            self.turn += 1
        worker = self.cycle.pop(0)
        if worker.exited or not worker.waiting:
            return
        worker.waiting = ""
        self.current = worker
        worker.to_worker.write("go\n")
        worker.to_worker.flush()

    def done(self, worker: Worker) -> None:
        if self.current is worker:
            self.current = None

    def gone(self, worker: Worker) -> None:
        self.cycle = [w for w in self.cycle if w is not worker]
        self.done(worker)


def _handle(opts: RunOptions, event: tuple[str, str, str], workers: dict[str, Worker],
            turns: _Turns) -> None:
    kind, name, line = event
    worker = workers.get(name)
    if worker is None:
        return
    if kind == "out":
        if line.startswith("[mlxcompat]"):
            print(line, flush=True)
        elif line.strip():
            worker.tail.append(line.strip())
    elif kind == "gate":
        verb, _, label = line.partition(" ")
        if verb == "want":
            worker.waiting = label or "?"
        elif verb == "done":
            turns.done(worker)
    elif kind == "eof":
        worker.code = worker.proc.wait()
        worker.exited = True
        worker.waiting = ""
        turns.gone(worker)
        took = time.monotonic() - worker.started
        print(f"[mlxcompat] {opts.cell} {name}: done in {took:.1f}s (exit {worker.code})",
              flush=True)


def run_cell(opts: RunOptions) -> dict[str, Any]:
    """Run every subject of the cell and write its JSON atomically; returns the document."""
    opts.out.unlink(missing_ok=True)  # never let last run's results stand in for this one's
    started = time.time()
    deadline = time.monotonic() + opts.timeout_s
    events: queue.Queue[tuple[str, str, str]] = queue.Queue()
    workers: dict[str, Worker] = {}
    turns = _Turns()
    todo = [s for s in opts.subjects if s.name not in opts.reused]
    with tempfile.TemporaryDirectory(prefix="mlxcompat-") as tmp_name:
        tmp = Path(tmp_name)
        probe_proc, probe_out = _start_probe(opts, tmp) if opts.probe and todo else (None, None)
        probe_tail: deque[str] = deque(maxlen=30)
        probe_reader = None
        if probe_proc is not None:
            probe_reader = threading.Thread(target=lambda: probe_tail.extend(
                line.rstrip() for line in probe_proc.stdout), daemon=True)  # type: ignore[union-attr]
            probe_reader.start()
        timed_out = False
        while todo or any(not w.exited for w in workers.values()):
            probe_busy = probe_proc is not None and probe_proc.poll() is None
            if probe_proc is not None and not probe_busy and probe_out is not None:
                _mark_probe_done(probe_out, probe_proc, probe_tail)
            active = sum(1 for w in workers.values() if not w.exited and not w.waiting
                         and turns.current is not w) + probe_busy
            while todo and active < max(1, opts.jobs):
                subject = todo.pop(0)
                workers[subject.name] = _start(opts, subject, tmp, probe_out, events)
                active += 1
            correctness = bool(todo) or any(not w.exited and not w.waiting
                                            and turns.current is not w
                                            for w in workers.values())
            if opts.bench:
                turns.grant(list(workers.values()), correctness or probe_busy)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                timed_out = True
                break
            try:
                _handle(opts, events.get(timeout=min(remaining, 1.0)), workers, turns)
            except queue.Empty:
                continue
        if timed_out:
            for w in workers.values():
                if not w.exited:
                    _kill(w.proc)
                    w.timed_out, w.exited = True, True
        if probe_proc is not None:
            if probe_proc.poll() is None:
                _kill(probe_proc)
            if probe_reader is not None:
                probe_reader.join(timeout=5)
        capabilities = _read_json(probe_out) if probe_out else None
        if probe_out is not None and capabilities is None:
            capabilities = {"error": "the probe process wrote nothing: "
                            + " | ".join(list(probe_tail)[-3:])}
        parts = {name: (w, _read_json(w.part), _read_json(w.part.with_suffix(".bench.json")))
                 for name, w in workers.items()}
        doc, benchmarks = merge_cell(opts, parts, capabilities, started)
    bench_out = opts.out.with_name(opts.out.name.removesuffix(".json") + ".bench.json")
    bench_out.unlink(missing_ok=True)
    if benchmarks is not None:
        write_json_atomic(bench_out, benchmarks)
    write_json_atomic(opts.out, doc)
    return doc


def _mark_probe_done(out: Path, proc: subprocess.Popen[str], tail: deque[str]) -> None:
    """Tell the waiting subjects that the probe ended without a record (it crashed)."""
    done = out.with_suffix(".done")
    if not out.exists() and not done.exists():
        done.write_text(f"the probe process exited with {proc.returncode}: "
                        + " | ".join(list(tail)[-3:]), encoding="utf-8")


def _read_json(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.exists():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError):
        return None
