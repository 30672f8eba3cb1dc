"""Who else used the bench CPU while timed rounds ran.

On Linux, /proc/stat gives each CPU's busy and steal time; this process's own CPU time
(`time.process_time`, every thread) is subtracted from the busy time of the CPU the rounds
are pinned to (or, unpinned, of the whole machine, in cores), so what remains is other
processes'. Ticks are 1/CLK_TCK s, so a row's rounds are summed before the share is taken.
Stdlib only: the subject processes import it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

TICK = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0


def cpu_times(cpu: int | None) -> tuple[float, float] | None:
    """(busy, steal) seconds of `cpu` (None: every CPU) since boot, or None off Linux."""
    name = "cpu" if cpu is None else f"cpu{cpu}"
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                head, *fields = line.split()
                if head == name and len(fields) >= 8:
                    user, nice, system, _idle, _iowait, irq, softirq, steal = (
                        int(x) for x in fields[:8])
                    return (user + nice + system + irq + softirq) / TICK, steal / TICK
    except OSError:
        return None
    return None


def run_cpus() -> set[int]:
    """Every CPU this run may use: MLXCOMPAT_CPUS as the nox process found them before it
    kept itself off a CPU another cell was timing rounds on (its children inherit that
    narrower set: `mlxcompat.benchlock`), else this process's own; empty off Linux."""
    named = os.environ.get("MLXCOMPAT_CPUS", "")
    if named:
        return {int(c) for c in named.split(",")}
    return set(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else set()


@dataclass
class CpuWatch:
    """Accumulates, over the rounds it watches, the CPU's busy and steal time, this
    process's CPU time and the wall time."""

    cpu: int | None
    busy: float = 0.0
    steal: float = 0.0
    own: float = 0.0
    wall: float = 0.0
    readable: bool = True
    _start: tuple[tuple[float, float] | None, float, float] | None = field(default=None,
                                                                            repr=False)

    def start(self) -> None:
        self._start = (cpu_times(self.cpu), time.process_time(), time.perf_counter())

    def stop(self) -> None:
        if self._start is None:
            return
        before, own, wall = self._start
        after = cpu_times(self.cpu)
        self.wall += time.perf_counter() - wall
        self.own += time.process_time() - own
        if before is None or after is None:
            self.readable = False
        else:
            self.busy += after[0] - before[0]
            self.steal += after[1] - before[1]
        self._start = None

    def shares(self) -> tuple[float, float] | None:
        """(other processes' share of the watched CPU time, the hypervisor's): of the pinned
        CPU, or unpinned of the whole machine (busy cores over all its cores); None where
        /proc/stat is not there."""
        if not self.readable or self.wall <= 0:
            return None
        cores = 1 if self.cpu is not None else (os.cpu_count() or 1)
        return (max(0.0, self.busy - self.own) / self.wall / cores,
                self.steal / self.wall / cores)
