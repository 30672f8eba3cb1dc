"""Subject processes of a cell: start one, read what it prints and says at the turn gate, and
the coordinator side of the gate (one timed round at a time, in rotating order)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from mlxcompat import deadman
from mlxcompat.cpuwatch import run_cpus
from mlxcompat.drivers.forked import SCRATCH_ENV
from mlxcompat.forkclient import Events, ForkServer, pump, read_fifo
from mlxcompat.matrix import SubjectSpec
from mlxcompat.matrix_entries import packaged
from mlxcompat.placement import POLICIES
from mlxcompat.records.names import UPSTREAM
from mlxcompat.spec import RunOptions, SubjectRun
from mlxcompat.turns import Hold, TurnOrder

NEED_PROBE = "(need probe)"  # the worker name of a need probe in a process of its own
SUITE_INI = Path(__file__).parent / "suite" / "pytest.ini"


@dataclass
class Worker:
    """One subject process and what the runner knows of it."""

    name: str
    proc: Any  # subprocess.Popen or ForkedProcess
    part: Path
    tail: deque[str]
    to_worker: IO[str] | None = None
    waiting: str = ""
    code: int | None = None
    timed_out: bool = False
    exited: bool = False
    started: float = field(default_factory=time.monotonic)


def subject_env(opts: RunOptions, subject: SubjectSpec | None,
                scratch: Path | None = None) -> dict[str, str]:
    """A subject process's environment; `scratch`, the runner's temporary folder, holds the
    temporary folders it makes (`drivers.forked.scratch`)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    if scratch is not None:
        env[SCRATCH_ENV] = str(scratch)
    # float32 means float32: MLX runs fp32 matmuls as TF32 on CUDA (and M5 Metal) unless
    # told not to, which alone moves batched vs single by ~1e-3 (ml-explore/mlx#3860).
    env.setdefault("MLX_ENABLE_TF32", "0")
    extra: list[str] = []
    if subject is not None and subject.requirements and opts.run.subject_dir:
        extra.append(str(Path(opts.run.subject_dir) / subject.name))
    if subject is not None:  # a source tree that cannot be installed runs from where it is
        extra += [str(f) for f in subject.folders(opts.matrix.source_dir()) if not packaged(f)]
    if extra:
        env["PYTHONPATH"] = os.pathsep.join([*extra, *filter(None, [env.get("PYTHONPATH")])])
    return env


def bench_cpu(device: str = "cpu") -> int | None:
    """The one CPU every worker of a cell runs its timed rounds on, on the CPU backend only:
    on a GPU backend MLX's host threads (command encoding, synchronisation) need cores, and a
    one-CPU pin measured the pin (2.8–12× lower tok/s on an H200); the turns alone keep the
    subjects' rounds apart there. MLXCOMPAT_BENCH_PIN=0 never pins, =1 pins on any backend
    (to measure what the pin costs); None off Linux."""
    policy = os.environ.get("MLXCOMPAT_BENCH_PIN", "auto")
    if policy == "0" or (policy != "1" and device != "cpu") \
            or not hasattr(os, "sched_getaffinity"):
        return None
    return max(run_cpus())


def bench_place(device: str = "cpu") -> str:
    """Where an unpinned subject places its timed thread (`mlxcompat.placement`):
    MLXCOMPAT_BENCH_PLACE, `free` unless named; "" where the rounds are pinned to the bench
    CPU (the CPU backend), which leaves nothing to place."""
    policy = os.environ.get("MLXCOMPAT_BENCH_PLACE", "free")
    if policy not in POLICIES:
        raise ValueError(f"MLXCOMPAT_BENCH_PLACE={policy!r}: expected one of {POLICIES}")
    return "" if bench_cpu(device) is not None else policy


def freeze_policy(device: str = "cpu") -> Hold | None:
    """How the runner keeps waiting subjects off a measuring one: on a GPU backend it freezes
    them (SIGSTOP to their process group) for every other subject's turn, since a process
    holding a CUDA context beside the timed one moved its rounds; on the CPU backend a waiting
    subject is blocked in a read and costs nothing, so nothing is frozen. MLXCOMPAT_BENCH_FREEZE
    =0 never freezes, =1 freezes on any backend (to measure what it changes)."""
    policy = os.environ.get("MLXCOMPAT_BENCH_FREEZE", "auto")
    if policy == "0" or (policy != "1" and device == "cpu") or not hasattr(signal, "SIGSTOP"):
        return None
    return (lambda w: _signal_group(w, signal.SIGSTOP),
            lambda w: _signal_group(w, signal.SIGCONT))


def _signal_group(worker: Any, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(worker.proc.pid, sig)


def older_releases(opts: RunOptions) -> set[str]:
    """Family members before the family's newest release: their throughput is not measured
    (the report shows a family by its newest release; the older ones' checks all run)."""
    return {m for family in opts.matrix.families.values() for m in list(family.members())[:-1]}


def _spec(opts: RunOptions, subject: SubjectSpec, part: Path, need: Path | None,
          turn_ends: list[int | str], hosts_need_probe: bool) -> SubjectRun:
    run = opts.run
    installed = (run.install.subjects if run.install else {}).get(subject.name)
    return SubjectRun.with_registry(
        opts.matrix.registry, cell=run.name, subject=subject.name, out=str(part),
        entry_points=dict(subject.entry_points), models=list(run.models),
        checks=list(run.checks or opts.matrix.run_checks()), only=dict(run.only),
        tolerance=run.tolerance, device=opts.device, force_cpu=list(opts.force_cpu),
        bench=opts.bench if subject.name not in older_releases(opts) else None,
        need_path=str(need) if need else "", hosts_need_probe=hosts_need_probe,
        installs=bool(subject.install),
        install_error=installed.error if installed and not installed.ok else "",
        turn_ends=turn_ends, bench_cpu=bench_cpu(opts.device),
        bench_place=bench_place(opts.device),
        others_frozen=freeze_policy(opts.device) is not None,
        borrow_from=UPSTREAM if run.borrow and subject.entry_points and subject.name != UPSTREAM
        and any(s.name == UPSTREAM for s in opts.subjects) else "")


def _argv(opts: RunOptions, tmp: Path, spec_path: Path, part: Path) -> list[str]:
    """pytest's unraisable-exception plugin is left out: it ends a session with two full
    garbage collections (0.12 s of CPU per subject process here, 223 processes in a full
    matrix) to print a warning for what a finalizer raised, and no check reads those."""
    return ["--pyargs", "mlxcompat.suite", "-c", str(SUITE_INI), f"--rootdir={tmp}",
            "-p", "mlxcompat.plugin", f"--mlxcompat-run={spec_path}", "-p", "no:cacheprovider",
            "-p", "no:unraisableexception", "-q", "-s", "--no-header", "-rN",
            "--benchmark-disable-gc",
            *([f"--benchmark-json={part.with_suffix('.bench.json')}"] if opts.bench else
              ["--benchmark-disable"]), *opts.run.pytest_args]


def start_worker(opts: RunOptions, subject: SubjectSpec, tmp: Path, need: Path | None,
                 events: Events, hosts_need_probe: bool = False,
                 server: ForkServer | None = None) -> Worker:
    """One long-lived pytest process for `subject` (forked warm by `server` when there is
    one), with the turn-gate channels when the cell measures throughput."""
    part = tmp / f"{subject.name}.json"
    env = subject_env(opts, subject, tmp)
    if server is not None:
        worker = _forked(opts, subject, tmp, need, events, hosts_need_probe, server, part, env)
    else:
        worker = _spawned(opts, subject, tmp, need, events, hosts_need_probe, part, env)
    print(f"[mlxcompat] {opts.run.name} {subject.name}: starting", flush=True)
    return worker


def _spawned(opts: RunOptions, subject: SubjectSpec, tmp: Path, need: Path | None,
             events: Events, hosts_need_probe: bool, part: Path, env: dict[str, str]) -> Worker:
    gate: list[int | str] = []
    mine: tuple[int, int] | None = None
    if opts.bench:
        r2w_read, r2w_write = os.pipe()  # runner -> worker: "go"
        w2r_read, w2r_write = os.pipe()  # worker -> runner: "want" / "done"
        gate = [r2w_read, w2r_write]
        mine = (r2w_write, w2r_read)
    spec_path = _spec(opts, subject, part, need, gate, hosts_need_probe).write(
        tmp / f"{subject.name}.spec.json")
    proc = subprocess.Popen([sys.executable, "-m", "pytest", *_argv(opts, tmp, spec_path, part)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, pass_fds=tuple(int(g) for g in gate))
    if freeze_policy(opts.device) is not None:  # frozen, it could not outlive the runner
        deadman.watch(proc.pid)                  # on its own: the switch ends it
    worker = Worker(subject.name, proc, part, deque(maxlen=30))
    threading.Thread(target=pump, args=(proc.stdout, subject.name, events, "out"),
                     daemon=True).start()
    if mine is not None:
        os.close(int(gate[0]))
        os.close(int(gate[1]))
        worker.to_worker = os.fdopen(mine[0], "w")
        threading.Thread(target=pump, args=(os.fdopen(mine[1]), subject.name, events, "gate"),
                         daemon=True).start()
    return worker


def _forked(opts: RunOptions, subject: SubjectSpec, tmp: Path, need: Path | None,
            events: Events, hosts_need_probe: bool, server: ForkServer, part: Path,
            env: dict[str, str]) -> Worker:
    out = tmp / f"{subject.name}.out"
    os.mkfifo(out)
    gate: list[int | str] = []
    if opts.bench:
        gate = [str(tmp / f"{subject.name}.go"), str(tmp / f"{subject.name}.want")]
        for path in gate:
            os.mkfifo(str(path))
    spec_path = _spec(opts, subject, part, need, gate, hosts_need_probe).write(
        tmp / f"{subject.name}.spec.json")
    proc = server.fork(_argv(opts, tmp, spec_path, part), env, str(out))
    worker = Worker(subject.name, proc, part, deque(maxlen=30))
    read_fifo(out, subject.name, events, proc)
    if gate:
        def open_gate() -> None:  # the same order the worker opens them in
            worker.to_worker = open(gate[0], "w")  # noqa: SIM115
            with open(gate[1], encoding="utf-8") as stream:
                pump(stream, subject.name, events, "gate")

        threading.Thread(target=open_gate, daemon=True).start()
    return worker


def start_need_probe(opts: RunOptions, out: Path, events: Events,
                     server: ForkServer | None = None) -> Worker:
    """The need probe in a process of its own (forked warm by `server` when there is one):
    for a cell without a `none` subject, and for every cell that times rounds, since the
    models and probes it leaves in its host slowed that host's later rounds (`none`'s decode
    ~1%, prefill ~2% against an identical process: reports/evidence/aa-processes)."""
    args = [str(out), opts.device, ",".join(opts.force_cpu)]
    if server is not None:
        fifo = out.with_suffix(".out")
        os.mkfifo(fifo)
        proc: Any = server.fork(args, subject_env(opts, None, out.parent), str(fifo),
                                module="mlxcompat.checks.need")
        read_fifo(fifo, NEED_PROBE, events, proc)
        return Worker(NEED_PROBE, proc, out, deque(maxlen=30))
    proc = subprocess.Popen([sys.executable, "-m", "mlxcompat.checks.need", *args],
                            env=subject_env(opts, None, out.parent), stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    worker = Worker(NEED_PROBE, proc, out, deque(maxlen=30))
    threading.Thread(target=pump, args=(proc.stdout, worker.name, events, "out"),
                     daemon=True).start()
    return worker


@contextlib.contextmanager
def stop_signals() -> Iterator[None]:
    """SIGTERM (timeout(1), a cancelled CI job) as SystemExit and Ctrl-C as KeyboardInterrupt
    while the runner holds subject processes and its folder, so its cleanup runs: by default
    Python dies on SIGTERM on the spot, and every subject it had frozen for another's turn
    stayed stopped for good (two held a GPU for the rest of a lease, 2026-12-06). The first
    of them ignores both until the block ends: a second one (Ctrl-C pressed twice, or nox
    passing on a signal the runner's group got too) cut the cleanup short and left the
    folder behind. Only the main thread can set a handler; elsewhere nothing changes, and a
    Ctrl-C this process was started to ignore stays ignored."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handled = [signal.SIGTERM]
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        handled.append(signal.SIGINT)

    def stop(signum: int, _frame: object) -> None:
        for sig in handled:
            signal.signal(sig, signal.SIG_IGN)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    previous = {sig: signal.signal(sig, stop) for sig in handled}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def handle(cell: str, event: tuple[str, str, str], workers: dict[str, Worker],
           turns: TurnOrder) -> None:
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
        deadman.forget(worker.proc.pid)
        worker.exited = True
        worker.waiting = ""
        turns.gone(worker)
        if name != NEED_PROBE:
            took = time.monotonic() - worker.started
            print(f"[mlxcompat] {cell} {name}: done in {took:.1f}s (exit {worker.code})",
                  flush=True)
