"""What moves a GPU round when nothing else runs? Each timed round of the bench's own run
(drivers.bench.time_batched) is set beside what the machine did meanwhile:

  sm_mhz   the GPU's SM clock, sampled every 50 ms by `nvidia-smi -lms` (read only; the
           clocks are left as they are)
  util     the GPU's utilisation over the same samples
  steal    the share of the machine's CPU time the hypervisor took (/proc/stat)
  nvcsw    involuntary context switches of this process (/proc/self/status)

and each case reports the rank correlation of tok/s with each. Three ways of timing a round:

  plain    one run of `tokens` tokens (the harness today)
  prewarm  an untimed run of the same shape right before the timed one (clocks ramped up)
  long     runs repeated until the round has lasted 0.5 s (tokens and seconds summed)

    PYTHONPATH=src python scripts/gpu/probe_clocks.py [rounds] [blocks]
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from pathlib import Path

import mlx.core as mx
import numpy as np

from mlxcompat.bench import bench_prompts, summarise
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models.lm import build_lm

CASES = [("llama", 1), ("llama", 8), ("llama", 32), ("mamba2", 8), ("mamba2", 32)]
LONG_S = 0.5


class Sampler:
    """nvidia-smi's SM clock and utilisation every 50 ms, with the time each line arrived."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, float, float]] = []
        try:
            self.proc: subprocess.Popen[str] | None = subprocess.Popen(
                ["nvidia-smi", "--query-gpu=clocks.sm,utilization.gpu", "--format=csv,"
                 "noheader,nounits", "-lms", "50"], stdout=subprocess.PIPE, text=True)
        except FileNotFoundError:  # no NVIDIA GPU here: rounds without clocks
            self.proc = None
            return
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                clock, util = (float(x) for x in line.split(","))
            except ValueError:
                continue
            self.samples.append((time.perf_counter(), clock, util))

    def between(self, start: float, end: float) -> tuple[float, float]:
        found = [(c, u) for t, c, u in self.samples if start <= t <= end + 0.05]
        if not found:
            return float("nan"), float("nan")
        return float(np.mean([c for c, _ in found])), float(np.mean([u for _, u in found]))

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.kill()


def _stat() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields), fields[7] if len(fields) > 7 else 0


def _nvcsw() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("nonvoluntary_ctxt_switches"):
            return int(line.split()[1])
    return 0


def _rank_corr(a: list[float], b: list[float]) -> float:
    x, y = np.asarray(a), np.asarray(b)
    keep = ~(np.isnan(x) | np.isnan(y))
    if keep.sum() < 4 or np.std(y[keep]) == 0:
        return float("nan")
    rx, ry = np.argsort(np.argsort(x[keep])), np.argsort(np.argsort(y[keep]))
    return float(np.corrcoef(rx, ry)[0, 1])


def one_round(model, prompts, tokens: int, how: str) -> tuple[float, float, float]:
    """(tok/s, start, end) of one timed round."""
    if how == "prewarm":
        time_batched(model, prompts, tokens)
    start = time.perf_counter()
    done = seconds = 0.0
    while True:
        t = time_batched(model, prompts, tokens)
        done += t.decode_tokens
        seconds += t.decode_s
        if how != "long" or time.perf_counter() - start >= LONG_S:
            break
    return done / seconds, start, time.perf_counter()


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 11
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    print(f"mlx {mx.__version__} {mx.default_device()}", flush=True)
    models = {name: build_lm(name) for name in ("llama", "mamba2")}
    sampler = Sampler()
    time.sleep(0.5)
    steady: dict[str, list[bool]] = {}
    try:
        for block in range(blocks):
            print(f"-- block {block + 1}", flush=True)
            for how in ("plain", "prewarm", "long"):
                for name, batch in CASES:
                    prompts = bench_prompts(batch, 32, "mixed")
                    for _ in range(2):
                        time_batched(models[name], prompts, 128)
                    tok, clock, util, steal, csw = [], [], [], [], []
                    gc.disable()
                    for _ in range(rounds):
                        s0, c0 = _stat(), _nvcsw()
                        value, start, end = one_round(models[name], prompts, 128, how)
                        s1, c1 = _stat(), _nvcsw()
                        mhz, busy = sampler.between(start, end)
                        tok.append(value)
                        clock.append(mhz)
                        util.append(busy)
                        steal.append((s1[1] - s0[1]) / max(1, s1[0] - s0[0]))
                        csw.append(c1 - c0)
                    gc.enable()
                    spread = summarise(tok).spread or 0
                    steady.setdefault(how, []).append(spread <= 0.05)
                    med = float(np.median(tok))
                    print(f"{how:<8} {name} b{batch:<3} median {med:8.0f} tok/s  robust CV "
                          f"{spread:6.1%}  sm MHz {min(clock):5.0f}-{max(clock):5.0f}"
                          f"  util {np.mean(util):4.0f}%  steal max {max(steal):.1%}  "
                          f"nvcsw {sum(csw)}  rank corr tok/s~MHz {_rank_corr(clock, tok):+.2f}"
                          f" ~util {_rank_corr(util, tok):+.2f} ~nvcsw "
                          f"{_rank_corr([float(c) for c in csw], tok):+.2f}", flush=True)
                    print("          rounds/median: " + " ".join(f"{v / med:.2f}" for v in tok)
                          + " | MHz: " + " ".join(f"{c:.0f}" for c in clock), flush=True)
    finally:
        sampler.stop()
    for how, flags in steady.items():
        print(f"{how:<8} rows with robust CV <= 5%: {sum(flags)}/{len(flags)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
