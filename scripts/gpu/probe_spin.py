"""Does MLX's CUDA backend keep host threads busy while its process idles (mlx#4451)?

Outside the harness: one process measures its own CPU use over an idle `seconds` (a sleep)
after each step: import, an evaluation on the default GPU stream, one on a second stream (as
mlx-lm's generation stream), and a third. It prints a JSON line per step with mlx's version,
the process's CPUs used while idle, and the busiest threads' share of a core. mlx#4451 (fixed
by mlx#4452) says each stream's completion worker spins once it has seen one batch.

    run_cell.sh exec <cell> python3 scripts/gpu/probe_spin.py [seconds]
"""

from __future__ import annotations

import json
import sys
import time

import mlx.core as mx
from sample_threads import thread_seconds  # scripts/gpu, this script's folder


def idle(step: str, seconds: float) -> None:
    before, cpu = thread_seconds(), time.process_time()
    time.sleep(seconds)
    used = (time.process_time() - cpu) / seconds
    after = thread_seconds()
    busiest = sorted(((after[t] - before.get(t, 0.0)) / seconds for t in after), reverse=True)
    print(json.dumps({"mlx": mx.__version__, "device": str(mx.default_device()), "step": step,
                      "idle_cpus": round(used, 3), "threads": len(after),
                      "busiest": [round(b, 2) for b in busiest[:4]]}), flush=True)


def main(seconds: float) -> None:
    idle("import", seconds)
    x = mx.random.normal((256, 256))
    mx.eval(x @ x)
    idle("default stream evaluated", seconds)
    for n in (2, 3):
        with mx.stream(mx.new_stream(mx.default_device())):
            y = x @ x
            mx.eval(y)
        mx.synchronize()
        idle(f"stream {n} evaluated", seconds)


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
