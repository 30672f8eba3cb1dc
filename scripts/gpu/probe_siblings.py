"""Is the host speed that moves GPU rounds this VM's own doing? Pure CPU, no mlx.

The tiny models' GPU rounds are host-bound, and their level shifts follow a fixed
pure-Python loop's speed (probe-host-cuda.log). If a busy hyperthread sibling inside the VM
slowed the loop (an MLX worker spinning next to the main thread, say), the harness could
place its threads to avoid it; if the loop also shifts with nothing of ours running, the
cause is beyond the VM and no placement helps. Three parts:

1. topology: what sysfs and lscpu say of the vCPUs (core ids, thread siblings, SMT);
2. pairs: the loop on CPU i, alone and with a spinning process on CPU j, for every i != j
   (best of three chunks each way): a sibling the VM can see shows as a ratio >= 1.2;
3. idle: the loop alone on a few CPUs for SECONDS each, nothing else of ours running: the
   spread of its chunks' speed, the share slower than 0.8x the median, and 0.5 s blocks.

    python3 scripts/gpu/probe_siblings.py [SECONDS] [--gate CV]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

SPIN = "import os, sys\nos.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True:\n    pass\n"


def chunk_s() -> float:
    """Seconds of a fixed pure-Python loop (about 1 ms on a 3 GHz core)."""
    start = time.perf_counter()
    total = 0
    for i in range(20_000):
        total += i * i
    return time.perf_counter() - start


def best_s(n: int = 3) -> float:
    return min(chunk_s() for _ in range(n))


def topology(cpus: list[int]) -> None:
    base = Path("/sys/devices/system/cpu")
    smt = base / "smt" / "active"
    print(f"cpus {cpus}; smt active: {smt.read_text().strip() if smt.exists() else 'n/a'}")
    for cpu in cpus:
        topo = base / f"cpu{cpu}" / "topology"
        fields = {name: (topo / name).read_text().strip() if (topo / name).exists() else "?"
                  for name in ("physical_package_id", "core_id", "thread_siblings_list")}
        print(f"  cpu{cpu}: package {fields['physical_package_id']} core {fields['core_id']} "
              f"siblings {fields['thread_siblings_list']}")
    lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    keep = ("Model name", "Thread(s) per core", "Core(s) per socket", "Socket(s)",
            "NUMA node(s)", "Hypervisor vendor", "CPU max MHz")
    print("\n".join(line for line in lscpu.splitlines() if line.startswith(keep)))


def pairs(cpus: list[int]) -> None:
    spinners = {}
    for cpu in cpus:
        proc = subprocess.Popen([sys.executable, "-c", SPIN, str(cpu)])
        os.kill(proc.pid, signal.SIGSTOP)
        spinners[cpu] = proc
    try:
        worst = []
        for i in cpus:
            os.sched_setaffinity(0, {i})
            ratios = {}
            for j in cpus:
                if j == i:
                    continue
                alone = best_s()
                os.kill(spinners[j].pid, signal.SIGCONT)
                time.sleep(0.005)
                busy = best_s()
                os.kill(spinners[j].pid, signal.SIGSTOP)
                ratios[j] = busy / alone
            slow = {j: r for j, r in ratios.items() if r >= 1.2}
            worst.append(max(ratios.values()))
            print(f"  loop on cpu{i}: median ratio {statistics.median(ratios.values()):.2f}, "
                  f"max {max(ratios.values()):.2f} (cpu{max(ratios, key=ratios.get)}); "
                  f">= 1.2 beside: {sorted(slow) or 'none'}")
        print(f"pairs: the largest ratio per loop CPU, median {statistics.median(worst):.2f}")
    finally:
        for proc in spinners.values():
            proc.kill()
            proc.wait()
        os.sched_setaffinity(0, set(cpus))


def steal() -> int:
    return int(Path("/proc/stat").read_text().split("\n", 1)[0].split()[8])


def idle(cpus: list[int], seconds: float) -> list[float]:
    """The loop alone on each of `cpus`; each one's robust CV."""
    spreads = []
    for cpu in cpus:
        os.sched_setaffinity(0, {cpu})
        stolen = steal()
        samples: list[tuple[float, float]] = []
        end = time.perf_counter() + seconds
        while (now := time.perf_counter()) < end:
            samples.append((now, chunk_s()))
        speed = [1.0 / s for _, s in samples]
        median = statistics.median(speed)
        mad = statistics.median(abs(v - median) for v in speed)
        slow = sum(v < 0.8 * median for v in speed) / len(speed)
        start = samples[0][0]
        blocks: dict[int, list[float]] = {}
        for (t, _), v in zip(samples, speed, strict=True):
            blocks.setdefault(int((t - start) / 0.5), []).append(v)
        line = " ".join(f"{statistics.median(b) / median:.2f}" for _, b in sorted(blocks.items()))
        spreads.append(1.4826 * mad / median)
        print(f"  cpu{cpu}: {len(speed)} chunks, robust CV {spreads[-1]:.1%}, "
              f"slower than 0.8x median {slow:.1%}, steal ticks {steal() - stolen}")
        print(f"    0.5 s blocks / median: {line}")
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    return spreads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("seconds", nargs="?", type=float, default=8.0,
                        help="seconds of the idle loop per CPU")
    parser.add_argument("--gate", type=float, metavar="CV",
                        help="the idle part only; exit 3 when the loop's robust CV passes CV "
                        "on any CPU probed (a host whose cores' speed moves: GPU rounds "
                        "timed there come out wide, scripts/gpu/README.md)")
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    load = Path("/proc/loadavg").read_text().split()[:3]
    print(f"-- topology (load {' '.join(load)})")
    topology(cpus)
    if args.gate is None:
        print("-- pairs: loop time with a spinner on another CPU / alone")
        pairs(cpus)
    picks = sorted({cpus[0], cpus[len(cpus) // 2], cpus[-1]})
    print(f"-- idle: the loop alone, {args.seconds:.0f} s per CPU")
    spreads = idle(picks, args.seconds)
    if args.gate is not None:
        steady = max(spreads) <= args.gate
        print(f"gate: largest robust CV {max(spreads):.1%} against {args.gate:.1%}: "
              f"{'steady' if steady else 'NOT steady, time nothing here'}")
        return 0 if steady else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
