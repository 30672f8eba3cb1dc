"""Run one cell: the need probe, then one long-lived pytest process per subject.

The need probe runs in the `none` subject's process (no patch is applied there) before its
checks, or in a process of its own when the cell has no `none`. Correctness runs up to `jobs`
subject processes at a time; a process that has finished its checks waits for its turn, and
once every live process waits, the timed rounds are granted one at a time in rotating order
(see `mlxcompat.turns`). The whole cell runs under one time budget. Nothing fails silently:
a process that crashes, exits with anything but 0/1, runs out of time or records fewer rows
than it collected adds an `error` row naming why, with the tail of its output; whatever it
recorded before is kept.
"""

from __future__ import annotations

import contextlib
import os
import queue
import tempfile
import time
from pathlib import Path

from mlxcompat import deadman, forkserver
from mlxcompat.bench_share import BenchShare
from mlxcompat.cpuwatch import run_cpus
from mlxcompat.forkclient import Events, ForkServer, kill
from mlxcompat.matrix import SubjectSpec
from mlxcompat.merge import Part, merge_cell
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.files import (
    last_check_seconds,
    read_document,
    read_json,
    write_json_atomic,
)
from mlxcompat.records.names import UPSTREAM
from mlxcompat.records.need import NeedRecord
from mlxcompat.spec import RunOptions
from mlxcompat.turns import TurnOrder
from mlxcompat.workers import (
    NEED_PROBE,
    Worker,
    bench_cpu,
    freeze_policy,
    handle,
    start_need_probe,
    start_worker,
    stop_signals,
    subject_env,
)


def _busy(workers: dict[str, Worker], turns: TurnOrder) -> int:
    """Processes doing correctness work (not waiting for a turn, not holding one)."""
    return sum(1 for w in workers.values() if not w.exited and not w.waiting
               and turns.current is not w)


def _loop(opts: RunOptions, tmp: Path, need: Path | None, events: Events,
          workers: dict[str, Worker], todo: list[SubjectSpec],
          server: ForkServer | None, share: BenchShare) -> bool:
    """Start, coordinate and collect every subject process; False when time ran out."""
    deadline = time.monotonic() + opts.run.timeout_s
    turns = TurnOrder(freeze_policy(opts.device))
    try:
        return _coordinate(opts, tmp, need, events, workers, todo, server, deadline, turns,
                           share)
    finally:
        turns.thaw_all()


def _coordinate(opts: RunOptions, tmp: Path, need: Path | None, events: Events,
                workers: dict[str, Worker], todo: list[SubjectSpec], server: ForkServer | None,
                deadline: float, turns: TurnOrder, share: BenchShare) -> bool:
    timed_phase = False
    host = need_host(todo, need, opts.bench)
    if host is not None:  # first: every other process waits for its need probe
        todo.sort(key=lambda s: s is not host)
    if need is not None and host is None:
        workers[NEED_PROBE] = start_need_probe(opts, need, events, server)
    while todo or any(not w.exited for w in workers.values()):
        share.tick()
        while todo and _busy(workers, turns) < max(1, opts.run.jobs):
            subject = todo.pop(0)
            workers[subject.name] = start_worker(opts, subject, tmp, need, events,
                                                 hosts_need_probe=subject is host,
                                                 server=server)
        if not todo and _busy(workers, turns) < max(1, opts.run.jobs):
            share.hand_off()  # a CPU is free: the next cell may start on it
        if opts.bench:
            checking = bool(todo) or _busy(workers, turns) > 0
            if not checking and not timed_phase and any(w.waiting for w in workers.values()):
                started = time.monotonic()
                if not share.take(deadline - started):
                    print(f"[mlxcompat] {opts.run.name}: another run held the bench CPU "
                          "for the rest of this cell's time", flush=True)
                    return False
                timed_phase = _keep_off_the_bench_cpu(opts.device)
                share.settle()
                deadline += time.monotonic() - started  # waiting is not this cell's time
            turns.grant([w for n, w in workers.items() if n != NEED_PROBE], checking)
            if turns.turn == 1 and not timed_phase:
                timed_phase = _keep_off_the_bench_cpu(opts.device)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return False
        try:
            handle(opts.run.name, events.get(timeout=min(remaining, 1.0)), workers, turns)
        except queue.Empty:
            continue
        if need is not None:
            _mark_need_done(need, workers.get(NEED_PROBE) or workers.get(UPSTREAM))
    return True


def need_host(todo: list[SubjectSpec], need: Path | None, bench: object) -> SubjectSpec | None:
    """Who runs the need probe before its own checks: `none` where no round is timed, else
    nobody (the probe gets a process of its own): what the probe left in `none` slowed its
    rounds, the reference of every paired overhead (`start_need_probe`)."""
    if need is None or bench:
        return None
    return next((s for s in todo if s.name == UPSTREAM), None)


def _keep_off_the_bench_cpu(device: str) -> bool:
    """Once timed rounds begin, the runner (its reader threads included) moves to the other
    CPUs, so it never preempts a round on the bench CPU."""
    cpu = bench_cpu(device)
    if cpu is None or not hasattr(os, "sched_getaffinity"):
        return True
    others = run_cpus() - {cpu}
    if others:
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(OSError, ValueError):
                os.sched_setaffinity(int(task.name), others)
    return True


def run_cell(opts: RunOptions) -> CellDoc:
    """Run every subject of the cell and write its JSON atomically; returns the document."""
    last = opts.run.last_seconds or last_check_seconds(opts.out)
    opts.out.unlink(missing_ok=True)  # never let last run's results stand in for this one's
    started = time.time()
    events: Events = queue.Queue()
    workers: dict[str, Worker] = {}
    todo = [s for s in opts.subjects
            if s.name not in opts.reused and s.name not in opts.run.same_as]
    todo.sort(key=lambda s: -last.get(s.name, float("inf")))  # the longest first
    with stop_signals(), tempfile.TemporaryDirectory(prefix="mlxcompat-") as tmp_name:
        tmp = Path(tmp_name)
        need = tmp / "need.json" if opts.need_probe and todo else None
        share = BenchShare(opts)
        server = (ForkServer(subject_env(opts, None, tmp))
                  if todo and forkserver.available() else None)
        try:
            finished = _loop(opts, tmp, need, events, workers, todo, server, share)
            if not finished:
                for w in _kill_live(workers):
                    w.timed_out, w.exited = True, True
        except BaseException:  # stopped (SIGTERM, Ctrl-C) or broken: no subject outlives it
            _kill_live(workers)
            if server is not None:
                server.abandon()
            raise
        finally:
            if server is not None:
                server.close()
            share.release()
        record = _need_record(need) if need else None
        workers.pop(NEED_PROBE, None)
        parts = {name: Part(w, read_document(w.part), read_json(w.part.with_suffix(".bench.json")))
                 for name, w in workers.items()}
        doc, benchmarks = merge_cell(opts, parts, record, started)
    bench_out = opts.out.with_name(opts.out.name.removesuffix(".json") + ".bench.json")
    bench_out.unlink(missing_ok=True)
    if benchmarks is not None:
        write_json_atomic(bench_out, benchmarks)
    write_json_atomic(opts.out, doc.to_json())
    return doc


def _kill_live(workers: dict[str, Worker]) -> list[Worker]:
    """Kill every worker still running; the ones killed."""
    live = [w for w in workers.values() if not w.exited]
    for w in live:
        kill(w.proc)
        deadman.forget(w.proc.pid)
    return live


def _need_record(path: Path) -> NeedRecord:
    found = read_json(path)
    if found is not None:
        return NeedRecord.from_json(found, path.name)
    done = path.with_suffix(".done")
    return NeedRecord(error=done.read_text() if done.exists() else
                      "the need probe wrote nothing (the cell's time budget ran out)")


def _mark_need_done(out: Path, host: Worker | None) -> None:
    """Tell the waiting subjects that the need probe's process ended without a record."""
    done = out.with_suffix(".done")
    if host is not None and host.exited and not out.exists() and not done.exists():
        done.write_text(f"the need probe's process ({host.name}) exited with {host.code} "
                        "before writing its record: " + " | ".join(list(host.tail)[-3:]),
                        encoding="utf-8")
