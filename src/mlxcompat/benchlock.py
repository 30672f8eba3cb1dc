"""The bench CPU as one resource of the machine, so one cell's timed rounds can run beside the
next cell's checks.

On the CPU backend a cell times its rounds on one CPU (`workers.bench_cpu`) and, until now,
left the other CPUs idle for the whole timed phase. A runner now takes an exclusive `flock`
on one lock file before its first timed round and keeps it until it ends; a runner (and the
nox process installing the next cell) that finds the lock held keeps itself and every
process it starts off the bench CPU (`confine`), and moves them back onto every CPU once the
lock is free (`widen`), leaving alone any task already pinned elsewhere (a subject waiting
for its turn is pinned to the bench CPU). The kernel drops the lock with the process that
held it, so a crash never leaves the bench taken. Linux only: elsewhere nothing overlaps.

MLXCOMPAT_OVERLAP=0 turns it off (every cell runs to its end before the next starts);
MLXCOMPAT_BENCH_LOCK names the lock file (default: one per user in the temp folder);
MLXCOMPAT_CPUS is how the nox process hands its runners the CPUs they may use.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from mlxcompat.cpuwatch import cpu_times, run_cpus

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


def lock_path() -> Path:
    named = os.environ.get("MLXCOMPAT_BENCH_LOCK")
    uid = os.getuid() if hasattr(os, "getuid") else 0
    return Path(named) if named else Path(tempfile.gettempdir()) / f"mlxcompat-bench-{uid}.lock"


def supported() -> bool:
    return fcntl is not None and hasattr(os, "sched_setaffinity")


def enabled() -> bool:
    """Whether cells may overlap here: MLXCOMPAT_OVERLAP unset or 1, Linux, ≥ 2 CPUs."""
    return os.environ.get("MLXCOMPAT_OVERLAP", "1") != "0" and supported() \
        and len(run_cpus()) >= 2


class BenchLock:
    """One holder's side of the lock file."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or lock_path()
        self._fd: int | None = None
        self.waited_s = 0.0

    @property
    def held(self) -> bool:
        return self._fd is not None

    def _try(self) -> bool:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            return False
        self._fd = fd
        return True

    def acquire(self, timeout_s: float, waiting: Callable[[], None] = lambda: None) -> bool:
        """Take the lock, calling `waiting` about once a second while another holds it;
        False when `timeout_s` passed first."""
        if self.held:
            return True
        started = time.monotonic()
        while not self._try():
            if time.monotonic() - started >= timeout_s:
                self.waited_s = time.monotonic() - started
                return False
            waiting()
            time.sleep(0.2)
        self.waited_s = time.monotonic() - started
        return True

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def held_elsewhere(path: Path | None = None) -> bool:
    """Whether another process holds the lock now (False where locks are not supported)."""
    if not supported():
        return False
    probe = BenchLock(path)
    if probe._try():
        probe.release()
        return False
    return True


def wait_free(limit_s: float, path: Path | None = None) -> float:
    """Wait until no other process holds the lock (another cell's timed rounds, which keep
    this process off the bench CPU, have ended), at most `limit_s`; the seconds waited."""
    if not supported():
        return 0.0
    probe = BenchLock(path)
    probe.acquire(limit_s)
    probe.release()
    return probe.waited_s


def _tasks(pids: list[int]) -> list[int]:
    found = []
    for pid in pids:
        with contextlib.suppress(OSError):
            found += [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    return found


def descendants(root: int) -> list[int]:
    """`root` and every process below it (read from /proc: parents of each process)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                parent = int(fh.read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(parent, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def off_the_bench(bench: int) -> set[int]:
    return run_cpus() - {bench}


def confine(bench: int) -> set[int]:
    """Move every thread of this process off the bench CPU (processes it starts inherit it);
    returns the set it now runs on."""
    others = off_the_bench(bench)
    for task in _tasks([os.getpid()]):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(task, others)
    return others


def confine_tree(bench: int) -> set[int]:
    """`confine` for this process and every process below it: each thread that may run on
    every CPU of the run moves off `bench` (one pinned elsewhere keeps its pin)."""
    every, others = run_cpus(), off_the_bench(bench)
    for task in _tasks(descendants(os.getpid())):
        with contextlib.suppress(OSError):
            if os.sched_getaffinity(task) == every:
                os.sched_setaffinity(task, others)
    return others


def clear_bench(bench: int, root: int, own: int) -> dict[int, set[int]]:
    """Move every task below `root` (the nox process that started this run), outside the
    tree of `own` (this runner), off the bench CPU, so nothing of this matrix run shares it
    from the first timed round on; tasks pinned elsewhere keep their pin. Returns each moved
    task's set before the move, for `restore`. Nothing when `root` is init (a runner started
    by a daemon): the whole machine is not this run's to move."""
    if root <= 1:
        return {}
    every, others = run_cpus(), off_the_bench(bench)
    mine = set(_tasks(descendants(own)))
    moved: dict[int, set[int]] = {}
    for task in _tasks(descendants(root)):
        if task in mine:
            continue
        with contextlib.suppress(OSError):
            before = os.sched_getaffinity(task)
            if bench in before and before == every:
                os.sched_setaffinity(task, others)
                moved[task] = before
    return moved


def restore(moved: dict[int, set[int]], bench: int) -> None:
    """Give the tasks `clear_bench` moved their CPUs back, unless something moved them since.
    Call it before releasing the lock: the next holder then finds them on every CPU and
    clears them again, where a restore after the release could undo its clearing."""
    others = off_the_bench(bench)
    for task, before in moved.items():
        with contextlib.suppress(OSError):
            if os.sched_getaffinity(task) == others:
                os.sched_setaffinity(task, before)


def wait_quiet(cpu: int, limit_s: float, window_s: float = 0.1, busy: float = 0.1) -> float:
    """Wait until `cpu` was busy less than `busy` of a `window_s` window, at most `limit_s`;
    the seconds waited."""
    started = time.monotonic()
    while time.monotonic() - started < limit_s:
        before = cpu_times(cpu)
        time.sleep(window_s)
        after = cpu_times(cpu)
        if before is None or after is None or (after[0] - before[0]) / window_s < busy:
            break
    return time.monotonic() - started


def unconfine() -> None:
    """Every thread of this process back onto every CPU of the run."""
    for task in _tasks([os.getpid()]):
        with contextlib.suppress(OSError):
            os.sched_setaffinity(task, run_cpus())


def widen(confined: set[int], every: set[int]) -> int:
    """Move every thread of this process and of its descendants that runs on exactly
    `confined` onto `every` CPU; a thread pinned to anything else keeps its pin. Returns the
    number of threads moved."""
    moved = 0
    for task in _tasks(descendants(os.getpid())):
        with contextlib.suppress(OSError):
            if os.sched_getaffinity(task) == confined:
                os.sched_setaffinity(task, every)
                moved += 1
    return moved
