"""Turn-taking between subject processes, so throughput rounds are exclusive and paired.

Both sides live here: `TurnTaker` in a subject process, `TurnOrder` in the runner.

Every subject runs in a long-lived process of its own (patches are process state). Before a
timed round a worker asks for a turn and blocks until the coordinator (the runner) grants
it. It keeps the turn until it asks for the next one (or exits), so whatever it does between
rounds (building the next model, bookkeeping) never runs beside another worker's timed
round. The coordinator grants one turn at a time, only once every live worker is waiting,
and rotates the order each cycle, so rounds of subjects A B C run as A B C, B C A, ...

On Linux a worker moves every one of its threads to one CPU, the same for every worker of
the cell, before its first timed round: on small VMs, processes handing the CPUs to each other
otherwise run for seconds at a fraction of their speed (measured: 0.42× phases on a 2-vCPU
machine), which is noise no number of rounds removes. Single-CPU rounds varied by 1-2%.

On a GPU backend the subjects waiting for a turn are frozen (SIGSTOP) while another holds it
and thawed when granted theirs (`TurnOrder(hold=...)`, see `workers.freeze_policy`): a process
that merely holds a CUDA context beside a measuring one moved its rounds there (robust CV
6-26% against 2-6% alone, reports/evidence/gpu/probe-spread.log).

Wire format, one line each: worker -> coordinator `want <label>` / `done <label>`;
coordinator -> worker `go`.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol


def pin_process(cpu: int) -> bool:
    """Move every thread of this process to `cpu` (threads made later inherit it)."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), {cpu})
        except (OSError, ValueError):
            continue
    os.sched_setaffinity(0, {cpu})
    return True


class TurnTaker:
    """The worker side. Without file descriptors (a run by hand) every turn is granted."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None,
                 cpu: int | None = None) -> None:
        self._in: IO[str] | None = os.fdopen(read_fd, "r") if read_fd is not None else None
        self._out: IO[str] | None = os.fdopen(write_fd, "w") if write_fd is not None else None
        self.label = ""
        self._holding = False
        self._cpu = cpu
        self.pinned: int | None = None

    def turn(self, label: str) -> None:
        """Give back the turn this worker holds, then block until it may run `label`."""
        self.release()
        self.label = label
        if self._cpu is not None and self.pinned is None and pin_process(self._cpu):
            self.pinned = self._cpu
        if self._out is None or self._in is None:
            return
        self._out.write(f"want {label}\n")
        self._out.flush()
        reply = self._in.readline().strip()
        if reply != "go":
            raise RuntimeError(f"bench coordinator answered {reply!r} instead of 'go'")
        self._holding = True

    def release(self) -> None:
        """Give the turn back (at the next turn, or when this worker has no more rounds)."""
        if self._out is not None and self._holding:
            self._out.write(f"done {self.label}\n")
            self._out.flush()
        self._holding = False


def turn_taker_from(ends: list[int | str], cpu: int | None = None) -> TurnTaker:
    """The worker's gate from two inherited descriptors, or two FIFO paths (a forked worker
    opens them itself: the runner's side opens in the same order, so neither blocks)."""
    if len(ends) != 2:
        return TurnTaker(cpu=cpu)
    go, want = ends
    if isinstance(go, str) and isinstance(want, str):
        return TurnTaker(os.open(go, os.O_RDONLY), os.open(want, os.O_WRONLY), cpu)
    return TurnTaker(int(go), int(want), cpu)


class Granted(Protocol):
    """What the coordinator needs of a worker: whether it is waiting, exited, and its pipe."""

    waiting: str
    exited: bool
    to_worker: IO[str] | None


Hold = tuple[Callable[[Granted], None], Callable[[Granted], None]]  # (freeze, thaw)


class TurnOrder:
    """The coordinator side: one turn at a time, only once every live worker waits, in an
    order that rotates each cycle (A B C, B C A, …). With `hold`, every other live worker is
    frozen while one holds the turn (all of them are waiting then), and thawed when granted."""

    def __init__(self, hold: Hold | None = None) -> None:
        self.cycle: list[Granted] = []
        self.current: Granted | None = None
        self.turn = 0
        self.hold = hold
        self.frozen: list[Granted] = []

    def grant(self, workers: list[Granted], others_running: bool) -> None:
        if self.current is not None or others_running:
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
        if self.hold is not None:
            freeze, thaw = self.hold
            for other in live:
                if other is not worker and not any(other is f for f in self.frozen):
                    freeze(other)
                    self.frozen.append(other)
            if any(worker is f for f in self.frozen):
                thaw(worker)
                self.frozen = [f for f in self.frozen if f is not worker]
        assert worker.to_worker is not None
        worker.to_worker.write("go\n")
        worker.to_worker.flush()

    def done(self, worker: Granted) -> None:
        if self.current is worker:
            self.current = None

    def gone(self, worker: Granted) -> None:
        self.cycle = [w for w in self.cycle if w is not worker]
        self.frozen = [f for f in self.frozen if f is not worker]
        self.done(worker)

    def thaw_all(self) -> None:
        """Thaw every frozen worker (the cell ends, or runs out of time: never leave a
        process stopped)."""
        if self.hold is not None:
            for worker in self.frozen:
                self.hold[1](worker)
        self.frozen = []
