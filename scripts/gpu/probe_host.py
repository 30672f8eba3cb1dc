"""Is the GPU rounds' spread the host CPU's own speed? The cells' GPU rounds move in level
shifts (runs of rounds at 1.25x, then 0.70x the median, probe-clocks.log, probe-spread.log)
with the SM clock fixed, no steal and nothing else running: the tiny models are host-bound,
so a host core that runs slower or faster for seconds at a time (its boost shared with other
tenants of the socket) would move whole rounds and never show on /proc/stat.

Each timed round of the bench's own run (drivers.bench.time_batched) is bracketed by a fixed
pure-Python loop (best of three, before and after); the case reports the rank correlation of
tok/s with the loop's speed, the loop's own robust CV, and the CPUs the main thread ran on.
Then the same rounds with the process confined to the CPUs local to the GPU's NUMA node, if
the machine says which.

    PYTHONPATH=src python scripts/gpu/probe_host.py [rounds] [blocks]
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import mlx.core as mx
import numpy as np

from mlxcompat.bench import bench_prompts, summarise
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models.lm import build_lm

CASES = [("llama", 1), ("llama", 8), ("llama", 32), ("mamba2", 8), ("mamba2", 32)]


def loop_s() -> float:
    """Seconds of a fixed pure-Python loop, best of three (about 2 ms on a 3 GHz core)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        total = 0
        for i in range(40_000):
            total += i * i
        best = min(best, time.perf_counter() - start)
    return best


def main_cpu() -> int:
    """The CPU this thread last ran on (field 39 of /proc/thread-self/stat)."""
    text = Path("/proc/thread-self/stat").read_text()
    return int(text.rsplit(")", 1)[1].split()[36])


def _rank_corr(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    if len(x) < 4 or np.std(x) == 0 or np.std(y) == 0:
        return float("nan")
    rx, ry = np.argsort(np.argsort(x)), np.argsort(np.argsort(y))
    return float(np.corrcoef(rx, ry)[0, 1])


def gpu_local_cpus() -> set[int] | None:
    """The CPUs of the GPU's NUMA node, from sysfs via the GPU's PCI address."""
    try:
        bus = subprocess.run(["nvidia-smi", "--query-gpu=pci.bus_id", "--format=csv,noheader"],
                             capture_output=True, text=True, check=True).stdout.split()[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return None
    bus = bus.lower()[-12:] if len(bus) > 12 else bus.lower()
    path = Path("/sys/bus/pci/devices") / bus / "local_cpulist"
    if not path.exists():
        return None
    cpus: set[int] = set()
    for part in path.read_text().strip().split(","):
        lo, _, hi = part.partition("-")
        cpus.update(range(int(lo), int(hi or lo) + 1))
    return cpus & os.sched_getaffinity(0) or None


def confine(cpus: set[int]) -> None:
    """Every thread of this process (MLX's host threads included) onto `cpus`."""
    for task in os.listdir("/proc/self/task"):
        os.sched_setaffinity(int(task), cpus)


def run_cases(models: dict, rounds: int, label: str, steady: dict[str, list[bool]],
              corr: dict[str, list[float]]) -> None:
    for name, batch in CASES:
        prompts = bench_prompts(batch, 32, "mixed")
        for _ in range(2):
            time_batched(models[name], prompts, 128)
        tok, speed, seen = [], [], set()
        gc.disable()
        for _ in range(rounds):
            before = loop_s()
            t = time_batched(models[name], prompts, 128)
            seen.add(main_cpu())
            after = loop_s()
            tok.append(t.decode_tokens / t.decode_s)
            speed.append(2 / (before + after))
        gc.enable()
        spread = summarise(tok).spread or 0
        loop_spread = summarise(speed).spread or 0
        rho = _rank_corr(speed, tok)
        steady.setdefault(label, []).append(spread <= 0.05)
        corr.setdefault(label, []).append(rho)
        med, smed = float(np.median(tok)), float(np.median(speed))
        print(f"{label:<6} {name} b{batch:<3} median {med:8.0f} tok/s  robust CV {spread:6.1%}"
              f"  loop CV {loop_spread:6.1%}  rank corr tok/s~loop speed {rho:+.2f}"
              f"  main thread on CPUs {sorted(seen)}", flush=True)
        print("          tok/s / median: " + " ".join(f"{v / med:.2f}" for v in tok), flush=True)
        print("          loop  / median: " + " ".join(f"{v / smed:.2f}" for v in speed),
              flush=True)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    every = os.sched_getaffinity(0)
    local = gpu_local_cpus()
    print(f"mlx {mx.__version__} {mx.default_device()} cpus {len(every)} "
          f"gpu-local {sorted(local) if local else None}", flush=True)
    models = {name: build_lm(name) for name in ("llama", "mamba2")}
    steady: dict[str, list[bool]] = {}
    corr: dict[str, list[float]] = {}
    for block in range(blocks):
        print(f"-- block {block + 1}", flush=True)
        confine(every)
        run_cases(models, rounds, "all", steady, corr)
        if local and local != every:
            confine(local)
            run_cases(models, rounds, "local", steady, corr)
    for label, flags in steady.items():
        print(f"{label:<6} rows with robust CV <= 5%: {sum(flags)}/{len(flags)}; rank corr "
              f"tok/s~loop speed median {np.nanmedian(corr[label]):+.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
