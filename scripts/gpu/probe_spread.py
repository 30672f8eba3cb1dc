"""What moves GPU throughput rounds? The bench's own timed run (drivers.bench.time_batched)
on one process, under the settings a harness could choose, each printed with the robust CV
the report shows (1.4826·MAD/median) and the rounds in order (a trend shows as a drift).

Settings tried, one after another on the same models:
  cores   all CPUs (today's GPU policy), one CPU (the CPU backend's pin), four CPUs
  tokens  64 and 256 generated tokens a round
  idle    a second process holding a CUDA context and sleeping (a subject waiting its turn)
  clear   mx.clear_cache() before every round (the allocator's cache as a cause)

    PYTHONPATH=src python scripts/gpu/probe_spread.py [rounds]
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import time
from pathlib import Path

import mlx.core as mx

from mlxcompat.bench import bench_prompts, summarise
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models.lm import build_lm
from mlxcompat.turns import pin_process

ALL = sorted(os.sched_getaffinity(0))
IDLE = ("import mlx.core as mx, time; mx.eval(mx.ones(4) + 1); mx.synchronize(); "
        "print('idle holder ready', flush=True); time.sleep(600)")


def _cores(policy: str) -> None:
    cpus = {"all": ALL, "one": ALL[-1:], "four": ALL[-4:]}[policy]
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), set(cpus))
        except OSError:
            continue
    if len(cpus) == 1:
        pin_process(cpus[0])


def _measure(model, batch: int, tokens: int, rounds: int, clear: bool) -> list[float]:
    prompts = bench_prompts(batch, 32, "mixed")
    for _ in range(2):
        time_batched(model, prompts, tokens)
    found = []
    gc.disable()
    try:
        for _ in range(rounds):
            if clear:
                mx.clear_cache()
            found.append(time_batched(model, prompts, tokens).decode_tok_s)
    finally:
        gc.enable()
    return found


def _line(tag: str, values: list[float]) -> str:
    s = summarise(values)
    order = " ".join(f"{v / (s.median or 1):.2f}" for v in values)
    return (f"{tag:<40} median {s.median or 0:9.0f} tok/s  robust CV {s.spread or 0:6.1%}  "
            f"max/min {max(values) / min(values):5.2f}  rounds/median: {order}")


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    print(f"mlx {mx.__version__} {mx.default_device()} cpus {len(ALL)} "
          f"load {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    models = {name: build_lm(name) for name in ("llama", "mamba2")}
    cases = [("llama", 1), ("llama", 8), ("llama", 32), ("mamba2", 1), ("mamba2", 8),
             ("mamba2", 32)]
    shares: dict[str, list[bool]] = {}

    def run(setting: str, tokens: int = 64, clear: bool = False) -> None:
        for name, batch in cases:
            start = time.perf_counter()
            values = _measure(models[name], batch, tokens, rounds, clear)
            shares.setdefault(setting, []).append((summarise(values).spread or 0) <= 0.05)
            print(_line(f"{setting} {name} b{batch}", values)
                  + f"  ({time.perf_counter() - start:.1f}s)", flush=True)

    for policy in ("all", "one", "four"):
        _cores(policy)
        run(f"cores={policy}")
    _cores("all")
    run("tokens=256", tokens=256)
    run("clear-cache", clear=True)
    holder = subprocess.Popen([sys.executable, "-c", IDLE], stdout=subprocess.PIPE, text=True)
    try:
        print(holder.stdout.readline().strip() if holder.stdout else "", flush=True)
        run("idle-cuda-process")
    finally:
        holder.kill()
    for setting, flags in shares.items():
        print(f"{setting:<20} rows with robust CV <= 5%: {sum(flags)}/{len(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
