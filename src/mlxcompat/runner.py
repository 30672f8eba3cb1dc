"""Run one cell: the clean-process probe, then one long-lived pytest process per subject.

The probe runs in the `none` subject's process (no patch is applied there) before its checks,
or in a process of its own when the cell has no `none`. Correctness runs up to `jobs` subject
processes at a time; a process that has finished its checks waits at the turn gate, and once
every live process waits, the timed rounds are granted one at a time in rotating order (see
`mlxcompat.gate`). The whole cell runs under one time budget. Nothing fails silently: a
process that crashes, exits with anything but 0/1, runs out of time or records fewer rows
than it collected adds an `error` row naming why, with the tail of its output; whatever it
recorded before is kept.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat import forkserver
from mlxcompat.matrix import Matrix, SubjectSpec
from mlxcompat.merge import merge_cell
from mlxcompat.results import write_json_atomic
from mlxcompat.workers import (
    Events,
    ForkServer,
    Turns,
    Worker,
    bench_cpu,
    handle,
    kill,
    start_probe,
    start_worker,
    subject_env,
)


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


def _busy(workers: dict[str, Worker], turns: Turns) -> int:
    """Processes doing correctness work (not waiting at the gate, not holding a turn)."""
    return sum(1 for w in workers.values() if not w.exited and not w.waiting
               and turns.current is not w)


def _loop(opts: RunOptions, tmp: Path, probe: Path | None, events: Events,
          workers: dict[str, Worker], todo: list[SubjectSpec],
          server: ForkServer | None) -> bool:
    """Start, coordinate and collect every subject process; False when time ran out."""
    deadline = time.monotonic() + opts.timeout_s
    turns = Turns()
    timed_phase = False
    host = next((s for s in todo if s.name == "none"), None) if probe else None
    if probe is not None and host is None:
        workers["(probe)"] = start_probe(opts, probe, events)
    while todo or any(not w.exited for w in workers.values()):
        while todo and _busy(workers, turns) < max(1, opts.jobs):
            subject = todo.pop(0)
            workers[subject.name] = start_worker(opts, subject, tmp, probe, events,
                                                 host_probe=subject is host, server=server)
        if opts.bench:
            turns.grant([w for n, w in workers.items() if n != "(probe)"],
                        bool(todo) or _busy(workers, turns) > 0)
            if turns.turn == 1 and not timed_phase:
                timed_phase = _keep_off_the_bench_cpu()
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            handle(opts.cell, events.get(timeout=min(remaining, 1.0)), workers, turns)
        except queue.Empty:
            continue
        if probe is not None:
            _mark_probe_done(probe, workers.get("(probe)") or workers.get("none"))
    return True


def _keep_off_the_bench_cpu() -> bool:
    """Once timed rounds begin, the runner (its reader threads included) moves to the other
    CPUs, so it never preempts a round on the bench CPU."""
    cpu = bench_cpu()
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        return True
    others = os.sched_getaffinity(0) - {cpu}
    if others:
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                os.sched_setaffinity(int(task.name), others)
    return True


def run_cell(opts: RunOptions) -> dict[str, Any]:
    """Run every subject of the cell and write its JSON atomically; returns the document."""
    opts.out.unlink(missing_ok=True)  # never let last run's results stand in for this one's
    started = time.time()
    events: Events = queue.Queue()
    workers: dict[str, Worker] = {}
    todo = [s for s in opts.subjects if s.name not in opts.reused]
    with tempfile.TemporaryDirectory(prefix="mlxcompat-") as tmp_name:
        tmp = Path(tmp_name)
        probe = tmp / "capabilities.json" if opts.probe and todo else None
        server = ForkServer(subject_env(opts, None)) if todo and forkserver.available() else None
        try:
            if not _loop(opts, tmp, probe, events, workers, todo, server):
                for w in workers.values():
                    if not w.exited:
                        kill(w.proc)
                        w.timed_out, w.exited = True, True
        finally:
            if server is not None:
                server.close()
        capabilities = _read_json(probe) if probe else None
        if probe is not None and capabilities is None:
            done = probe.with_suffix(".done")
            capabilities = {"error": done.read_text() if done.exists() else
                            "the probe wrote nothing (the cell's time budget ran out)"}
        workers.pop("(probe)", None)
        parts = {name: (w, _read_json(w.part), _read_json(w.part.with_suffix(".bench.json")))
                 for name, w in workers.items()}
        doc, benchmarks = merge_cell(opts, parts, capabilities, started)
    bench_out = opts.out.with_name(opts.out.name.removesuffix(".json") + ".bench.json")
    bench_out.unlink(missing_ok=True)
    if benchmarks is not None:
        write_json_atomic(bench_out, benchmarks)
    write_json_atomic(opts.out, doc)
    return doc


def _mark_probe_done(out: Path, host: Worker | None) -> None:
    """Tell the waiting subjects that the probe's process ended without a record."""
    done = out.with_suffix(".done")
    if host is not None and host.exited and not out.exists() and not done.exists():
        done.write_text(f"the probe's process ({host.name}) exited with {host.code} before "
                        "writing its record: " + " | ".join(list(host.tail)[-3:]),
                        encoding="utf-8")


def _read_json(path: Path | None) -> dict[str, Any] | None:
    if path is None or not path.exists():
        return None
    try:
        return dict(json.loads(path.read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError):
        return None
