"""One runner's part in sharing the machine with the runners of other cells
(`mlxcompat.benchlock`, `mlxcompat.cell_runs`).

- It hands on (writes the handoff file the nox process waits for) as soon as a CPU would
  go idle: every subject process is started and fewer than `jobs` still check. The next
  cell then installs and checks beside this cell's last checks and its timed rounds.
- It takes the bench lock before its first timed round, moves every other process of the
  matrix run (the tree of the nox process that started it, less its own) off the bench CPU,
  and waits (briefly) for that CPU to fall quiet; they get their CPUs back just before it
  releases the lock. Each runner also looks for itself, for the processes it starts.
- While another runner holds the lock, this runner and every process below it stay off the
  bench CPU; once the lock is free they use every CPU again. Twice a second it looks.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from mlxcompat import benchlock
from mlxcompat.cpuwatch import run_cpus
from mlxcompat.spec import RunOptions
from mlxcompat.workers import bench_cpu


class BenchShare:
    CHECK_EVERY_S = 0.5

    def __init__(self, opts: RunOptions) -> None:
        self.name = opts.run.name
        self.cpu = bench_cpu(opts.device)
        self.on = self.cpu is not None and benchlock.enabled()
        self.lock = benchlock.BenchLock()
        self.confined: set[int] | None = None
        self.handoff = os.environ.get("MLXCOMPAT_HANDOFF", "")
        self._checked = 0.0
        self._cleared: dict[int, set[int]] = {}
        if self.on:
            if not benchlock.held_elsewhere(self.lock.path):
                benchlock.unconfine()  # the nox process may have started it off the bench CPU
            self.tick(force=True)

    def tick(self, force: bool = False) -> None:
        """Off the bench CPU while another runner holds it, back onto every CPU after."""
        now = time.monotonic()
        if not self.on or self.cpu is None or self.lock.held or (
                not force and now - self._checked < self.CHECK_EVERY_S):
            return
        self._checked = now
        elsewhere = benchlock.held_elsewhere(self.lock.path)
        if elsewhere and self.confined is None:
            self.confined = benchlock.confine_tree(self.cpu)
            print(f"[mlxcompat] {self.name}: checks off CPU {self.cpu} while another cell "
                  "times its rounds there", flush=True)
        elif not elsewhere and self.confined is not None:
            benchlock.widen(self.confined, run_cpus())
            self.confined = None

    def take(self, timeout_s: float) -> bool:
        """The lock for this cell's timed rounds (waiting while another cell's run); False
        when it stayed taken for `timeout_s`."""
        if not self.on or self.lock.held:
            return True
        if not self.lock.acquire(timeout_s):
            return False
        if self.confined is not None:
            benchlock.widen(self.confined, run_cpus())
            self.confined = None
        if self.cpu is not None:
            self._cleared = benchlock.clear_bench(self.cpu, os.getppid(), os.getpid())
        if self.lock.waited_s >= 1:
            print(f"[mlxcompat] {self.name}: waited {self.lock.waited_s:.1f}s for the bench "
                  "CPU", flush=True)
        self.hand_off()
        return True

    def settle(self) -> None:
        """Before the first timed round: until the bench CPU is quiet (other runners move off
        it within CHECK_EVERY_S of seeing the lock), at most four times that."""
        if self.on and self.cpu is not None:
            benchlock.wait_quiet(self.cpu, 4 * self.CHECK_EVERY_S)

    def release(self) -> None:
        """The end of this cell's timed rounds: the processes moved for them get their CPUs
        back, then the lock goes."""
        if self._cleared and self.cpu is not None:
            benchlock.restore(self._cleared, self.cpu)
            self._cleared = {}
        self.lock.release()

    def hand_off(self) -> None:
        if self.handoff:
            Path(self.handoff).write_text(str(os.getpid()), encoding="utf-8")
            self.handoff = ""
