"""Where a GPU subject's timed thread runs, round by round.

On a GPU backend nothing is pinned (`workers.bench_cpu`: MLX's host threads need cores), and
the rounds of every full cell run so far met a core whose speed switched between two levels:
the calibration loop at ~3.5 ms or at ~7 ms from one round to the next, tok/s following it
(scripts/gpu/README.md, "2026-12-07"). A policy here decides where the subject's main thread
(the one that encodes MLX's work and times the round) runs:

  free    the kernel places every thread (the GPU default)
  alone   the main thread on one CPU of its own; every other thread of the process on the
          other CPUs, so none of MLX's busy host threads shares the main thread's CPU
  steady  alone, and before each round, where the calibration loop runs slower than SLOW x
          the fastest this process has timed, the main thread moves to the next CPU, at
          most MOVES times, and the round runs on the fastest CPU found

On the one H200 that measured them (reports/evidence/gpu/place-h200-126b819.tgz) no slow
round waited for a CPU or shared one: the level was the host's, and neither policy held a
row's spread, so `free` stays the default.

The choice is `MLXCOMPAT_BENCH_PLACE` (runner side, `workers.bench_place`); the CPU backend
pins every thread to the bench CPU instead (`turns.pin_process`) and never places here.
Stdlib only: the subject processes import it.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable
from pathlib import Path

POLICIES = ("free", "alone", "steady")
SLOW = 1.5  # the fast level's rounds spread to 1.34x their fastest, the slow level is ~2x
MOVES = 4


class Placement:
    """One subject process's placement of its timed (main) thread."""

    def __init__(self, policy: str, cpus: set[int] | None = None) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown placement {policy!r}; expected one of {POLICIES}")
        self.policy = policy
        self.cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0)) \
            if hasattr(os, "sched_getaffinity") else []
        self.cpu: int | None = None
        self.fastest: float | None = None
        self.moves = 0  # moves made after the first placement, over the process's life
        self._main = threading.get_native_id()

    @property
    def active(self) -> bool:
        return self.policy != "free" and len(self.cpus) >= 2

    def place(self, cpu: int) -> None:
        """The main thread on `cpu`, every other thread of this process off it. A thread
        that ends meanwhile is passed over; the main thread's own move must succeed, or the
        row would name a placement its rounds did not have."""
        os.sched_setaffinity(self._main, {cpu})
        others = set(self.cpus) - {cpu}
        for task in Path("/proc/self/task").iterdir():
            with contextlib.suppress(ValueError, OSError):
                if int(task.name) != self._main:
                    os.sched_setaffinity(int(task.name), others)
        self.cpu = cpu

    def _timed(self, loop: Callable[[], float]) -> float:
        seconds = loop()
        self.fastest = seconds if self.fastest is None else min(self.fastest, seconds)
        return seconds

    def settle(self, loop: Callable[[], float]) -> float:
        """Place the main thread for the next round and time `loop` where it will run; the
        loop's seconds there. The first call times the loop on every CPU and starts on the
        fastest."""
        if not self.active:
            return loop()
        if self.cpu is None:
            timed = {}
            for cpu in reversed(self.cpus):
                self.place(cpu)
                timed[cpu] = self._timed(loop)
            self.place(min(timed, key=timed.__getitem__))
            return self._timed(loop)
        self.place(self.cpu)  # threads made since the last round leave the main one's CPU
        seconds = self._timed(loop)
        if self.policy != "steady":
            return seconds
        assert self.fastest is not None
        tried = {self.cpu: seconds}
        for _ in range(min(MOVES, len(self.cpus) - 1)):
            if seconds <= SLOW * self.fastest:
                break
            nxt = self.cpus[(self.cpus.index(self.cpu) - 1) % len(self.cpus)]
            self.place(nxt)
            self.moves += 1
            seconds = tried[nxt] = self._timed(loop)
        best = min(tried, key=tried.__getitem__)
        if best != self.cpu:
            self.place(best)
            self.moves += 1
            seconds = self._timed(loop)
        return seconds
