"""Does a second process with a CUDA context, waiting its turn, move GPU throughput rounds?

The harness's subjects wait at the turn gate with their CUDA contexts open while one of them
measures. This probe times the bench's own run (drivers.bench.time_batched) with such a
process beside it in three states, interleaved in blocks so that drift over the minute is not
mistaken for a setting's effect:

  running   the holder waits in a blocking read, as a subject at the gate does
  stopped   the holder is frozen with SIGSTOP (what the runner can do to waiting subjects)
  gone      no holder (measured last, after the holder is killed)

It also prints what the waiting holder costs the machine: its CPU seconds per wall second and
its thread count, read from /proc.

    PYTHONPATH=src python scripts/gpu/probe_isolation.py [rounds] [blocks]
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import mlx.core as mx
from probe_spread import _measure  # the same timed rounds (run from scripts/gpu)

from mlxcompat.bench import summarise
from mlxcompat.models.lm import build_lm

HOLDER = ("import sys, mlx.core as mx; mx.eval(mx.ones(4) + 1); mx.synchronize(); "
          "print('holder ready', flush=True); sys.stdin.readline()")
CASES = [("llama", 1), ("llama", 8), ("llama", 32), ("mamba2", 1), ("mamba2", 8),
         ("mamba2", 32)]


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def holder_cost(pid: int, seconds: float = 3.0) -> str:
    before = cpu_seconds(pid)
    time.sleep(seconds)
    used = (cpu_seconds(pid) - before) / seconds
    threads = len(os.listdir(f"/proc/{pid}/task"))
    return f"waiting holder: {used:.2f} CPU-s per s, {threads} threads"


def measure(model, batch: int, tokens: int, rounds: int) -> list[float]:
    return _measure(model, batch, tokens, rounds, clear=False)


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    print(f"mlx {mx.__version__} {mx.default_device()} cpus {len(os.sched_getaffinity(0))} "
          f"load {Path('/proc/loadavg').read_text().split()[:3]}", flush=True)
    models = {name: build_lm(name) for name in ("llama", "mamba2")}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None
    print(holder.stdout.readline().strip(), flush=True)
    print(holder_cost(holder.pid), flush=True)
    steady: dict[str, list[bool]] = {}
    medians: dict[tuple[str, str, int], list[float]] = {}

    def run(setting: str) -> None:
        for name, batch in CASES:
            values = measure(models[name], batch, 128, rounds)
            s = summarise(values)
            steady.setdefault(setting, []).append((s.spread or 0) <= 0.05)
            medians.setdefault((setting, name, batch), []).append(s.median or 0)
            order = " ".join(f"{v / (s.median or 1):.2f}" for v in values)
            print(f"{setting:<8} {name} b{batch:<3} median {s.median or 0:8.0f} tok/s  "
                  f"robust CV {s.spread or 0:6.1%}  rounds/median: {order}", flush=True)

    try:
        for block in range(blocks):
            print(f"-- block {block + 1}", flush=True)
            for setting in (("running", "stopped") if block % 2 == 0 else ("stopped", "running")):
                os.kill(holder.pid, signal.SIGCONT if setting == "running" else signal.SIGSTOP)
                run(setting)
        os.kill(holder.pid, signal.SIGCONT)
        print(holder_cost(holder.pid), flush=True)
    finally:
        holder.kill()
        holder.wait()
    for block in range(blocks):
        print(f"-- gone {block + 1}", flush=True)
        run("gone")
    for setting, flags in steady.items():
        print(f"{setting:<8} rows with robust CV <= 5%: {sum(flags)}/{len(flags)}")
    for (setting, name, batch), values in medians.items():
        if setting == "running":
            alone = medians.get(("stopped", name, batch), [0])
            print(f"{name} b{batch}: median tok/s running {' '.join(f'{v:.0f}' for v in values)}"
                  f" | stopped {' '.join(f'{v:.0f}' for v in alone)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
