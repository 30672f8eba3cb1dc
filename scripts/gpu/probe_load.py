"""Does this VM's own load slow the core a timed round runs on? Pure CPU, no mlx.

Every full GPU cell run so far timed its rounds on a core whose speed moved between two
levels (the bench's calibration loop at ~3.3 ms or at ~7 ms), while bench-only runs on the
steady H100 leases held ~3.3 ms (`scripts/bench_spread.py --by-host`). A full run keeps ~6
of the 16 vCPUs busy (servers, MLX's spinning stream threads: `sample_threads.py`). This
times the bench's own loop (`mlxcompat.bench.calibration_loop`'s body, copied: this runs on
the machine's bare python) on CPU 0 with N spinning processes beside it, pinned to other
CPUs, for N = 0 … 14: if the loop slows as N grows, the VM's vCPUs share host cores and the
harness's own busy threads are what moves the rounds.

    python3 scripts/gpu/probe_load.py [ROUNDS] [--gate RATIO]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time

from probe_siblings import SPIN  # a process spinning on the CPU its argument names


def loop_s() -> float:
    start = time.perf_counter()
    total = 0
    for i in range(100_000):
        total += i & 7
    return time.perf_counter() - start


def timed(rounds: int) -> tuple[float, str]:
    """The loop's median ms over `rounds`, and its p5/p50/p95 as a line."""
    values = sorted(loop_s() * 1e3 for _ in range(rounds))
    pick = [values[round(q * (len(values) - 1))] for q in (0.05, 0.5, 0.95)]
    return pick[1], f"loop ms p5/p50/p95 {pick[0]:.2f}/{pick[1]:.2f}/{pick[2]:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rounds", nargs="?", type=int, default=200)
    parser.add_argument("--gate", type=float, metavar="RATIO",
                        help="exit 3 when the loop's median beside any number of spinners "
                        "passes RATIO x its median alone (a core our own busy threads slow)")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    here, others = cpus[0], cpus[1:]
    os.sched_setaffinity(0, {here})
    with open("/proc/loadavg") as stream:
        load = stream.read().split()[:3]
    print(f"loop on cpu{here}, {args.rounds} rounds each; load {' '.join(load)}")
    medians: dict[int, float] = {}
    for n in sorted({k for k in (0, 1, 2, 4, 8) if k <= len(others)} | {len(others)}):
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN, str(cpu)])
                    for cpu in others[:n]]
        try:
            time.sleep(0.2)
            medians[n], line = timed(args.rounds)
            print(f"  {n:>2} spinners beside it: {line}", flush=True)
        finally:
            for proc in spinners:
                proc.send_signal(signal.SIGKILL)
                proc.wait()
    alone, line = timed(args.rounds)
    print(f"   0 spinners again:     {line}")
    if args.gate is None:
        return 0
    worst = max(medians.values()) / min(medians[0], alone)
    steady = worst <= args.gate
    print(f"gate: slowest median {worst:.2f}x the loop alone against {args.gate:.2f}x: "
          f"{'steady' if steady else 'NOT steady, time nothing here'}")
    return 0 if steady else 3


if __name__ == "__main__":
    sys.exit(main())
