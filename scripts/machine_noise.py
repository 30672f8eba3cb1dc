"""How steady is this machine's CPU by itself? A fixed pure-Python loop, timed N times on one
CPU with nothing else running: its robust CV and max/min bound what any benchmark here can
show (the bench's own spread cannot be tighter than the machine's).

    taskset -c 1 python3 scripts/machine_noise.py [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    times = []
    for _ in range(rounds):
        start, total = time.perf_counter(), 0
        for k in range(2_000_000):
            total += k
        times.append(time.perf_counter() - start)
    median = statistics.median(times)
    mad = statistics.median(abs(t - median) for t in times)
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    print(f"{rounds} rounds of a fixed loop: median {median * 1000:.1f} ms, min "
          f"{min(times) * 1000:.1f}, max {max(times) * 1000:.1f}, robust CV "
          f"{1.4826 * mad / median:.1%}, max/min {max(times) / min(times):.2f} "
          f"(load average {' '.join(load)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
