"""Why `mlxcompat` times llama's prefill 2-4% below `none` in idle sweeps, though its patch
leaves llama alone: two suspects, each timed on llama batch 8, mixed prompts (the quick
profile's row), on one pinned CPU. Run with a cell's interpreter:

    .nox/matrix-mlx-lm-0-32-2/bin/python scripts/llama_prefill_probe.py wrapper
    .nox/matrix-mlx-lm-0-32-2/bin/python scripts/llama_prefill_probe.py leftover [reps]

`wrapper`: one process, PAIRS (env, default 21) pairs of rounds; per pair an unpatched round,
then a patched one (an untimed round after each change), against an A/A of two unpatched
rounds, and against the same without the untimed round after the patch is installed and
removed (`noop`).
`leftover`: fresh processes per arm, median of 15 rounds each: A nothing before the rounds,
B the patch's capability probe (`ssm_probe.padding_leaks`) first, C the probe then
gc.collect and mx.clear_cache, D the probe then gc.collect.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys

ROUNDS = 15
PAIRS = int(os.environ.get("PAIRS", "21"))


def _pin() -> None:
    """Every thread of this process on one CPU, as the bench's turns pin a subject: pinned
    only after the probe, its MLX threads stayed on the other CPU and rounds ran ~20%
    slower (a first version of this script)."""
    from mlxcompat.turns import pin_process

    pin_process(max(os.sched_getaffinity(0)))


def _setup():
    from mlxcompat.bench import bench_prompts
    from mlxcompat.drivers import bench as timers
    from mlxcompat.models.lm import llama

    net, prompts = llama(0), bench_prompts(8, 16, "mixed")

    def one():
        gc.disable()
        try:
            return timers.time_batched(net, prompts, 16)
        finally:
            gc.enable()

    return one


def wrapper() -> None:
    from mlxcompat.patches import mamba_cache

    _pin()
    one = _setup()
    for _ in range(3):
        one()
    for arm in ("aa", "warm", "noop"):
        ratios = []
        for _ in range(PAIRS):
            if arm == "warm":
                one()
                a = one()
                mamba_cache.ensure_mamba_support()
                one()
                b = one()
                mamba_cache.unpatch()
            elif arm == "noop":
                a = one()
                mamba_cache.ensure_mamba_support()
                mamba_cache.unpatch()
                b = one()
            else:
                a, b = one(), one()
            ratios.append(b.prefill_tok_s / a.prefill_tok_s)
        ratios.sort()
        low, high = ratios[len(ratios) // 4], ratios[3 * len(ratios) // 4]
        print(f"{arm:<5} second/first prefill over {len(ratios)} pairs: median "
              f"{statistics.median(ratios):.4f} (quartiles {low:.3f} {high:.3f})", flush=True)


def arm(name: str) -> None:
    import mlx.core as mx

    from mlxcompat.patches import ssm_probe

    _pin()
    if name != "A":
        ssm_probe.padding_leaks()
    if name in ("C", "D"):
        gc.collect()
    if name == "C":
        mx.clear_cache()
    one = _setup()
    for _ in range(3):
        one()
    rounds = [one() for _ in range(ROUNDS)]
    print(f"{name} prefill {statistics.median(r.prefill_tok_s for r in rounds):.0f} "
          f"decode {statistics.median(r.decode_tok_s for r in rounds):.0f}", flush=True)


def leftover(reps: int) -> None:
    found: dict[str, list[float]] = {}
    for _ in range(reps):
        for name in "ABCD":
            out = subprocess.run([sys.executable, __file__, "arm", name], check=True,
                                 capture_output=True, text=True).stdout.split()
            found.setdefault(name, []).append(float(out[2]))
            print(" ".join(out), flush=True)
    base = statistics.median(found["A"])
    for name, values in found.items():
        print(f"arm {name}: median prefill {statistics.median(values):.0f} tok/s "
              f"({statistics.median(values) / base - 1:+.1%} against A) over {len(values)}")


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "wrapper":
        wrapper()
    elif what == "arm":
        arm(sys.argv[2])
    else:
        leftover(int(sys.argv[2]) if len(sys.argv) > 2 else 6)
