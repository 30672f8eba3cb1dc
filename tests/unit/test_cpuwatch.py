"""The bench CPU watch sees another process that runs on the watched CPU."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from mlxcompat.cpuwatch import CpuWatch, cpu_times

pytestmark = pytest.mark.skipif(cpu_times(None) is None, reason="no /proc/stat here")
HOG = "import time\nend = time.time() + 1.5\nwhile time.time() < end: pass\n"


def _watch(cpu: int, seconds: float) -> CpuWatch:
    watch = CpuWatch(cpu)
    watch.start()
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        time.sleep(0.01)  # mostly idle: what this process uses is little
    watch.stop()
    return watch


def test_a_busy_loop_on_the_watched_cpu_is_another_process_s_share() -> None:
    cpu = max(os.sched_getaffinity(0))
    quiet = _watch(cpu, 0.5).shares()
    hog = subprocess.Popen(["taskset", "-c", str(cpu), sys.executable, "-c", HOG])
    try:
        time.sleep(0.1)
        busy = _watch(cpu, 1.0).shares()
    finally:
        hog.wait()
    assert quiet is not None and busy is not None
    assert busy[0] > 0.6 > quiet[0] + 0.2, (quiet, busy)
