"""Harness overhead: mlxcompat's timed batched run vs a bare, hand-written BatchGenerator loop.

Same model (tiny llama), batch, prompt and generation lengths, dtype and device, measured the
way the bench measures: rounds interleaved (bare, harness, bare, ...), garbage collection off
inside a round, the process on one CPU where the bench pins (the CPU backend: see
mlxcompat.workers.bench_cpu). Prints both medians with their 95% intervals and spread, and
the paired ratio harness / bare with its interval (mlxcompat.bench.paired_ratio).

    .nox/matrix-mlx-lm-0-32-2/bin/python benchmarks/harness_overhead.py --batch 8 --rounds 15
    python benchmarks/harness_overhead.py --backend cuda --dtype bfloat16 --batch 32
"""

from __future__ import annotations

import argparse
import gc
import time

import mlx.core as mx

from mlxcompat.bench import bench_prompts, paired_ratio, summarise
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models.lm import build_lm
from mlxcompat.turns import pin_process
from mlxcompat.workers import bench_cpu


def bare_loop(model, prompts: list[list[int]], gen_tokens: int) -> float:
    """Decode tok/s of the plainest loop over the installed BatchGenerator (0.31.3+ API)."""
    from mlx_lm.generate import BatchGenerator

    gen = BatchGenerator(model=model, max_tokens=gen_tokens,
                         completion_batch_size=len(prompts), prefill_batch_size=len(prompts))
    gen.insert(prompts, max_tokens=[gen_tokens] * len(prompts))
    seen: set[int] = set()
    done = tokens = 0
    first = None
    while done < len(prompts):
        out = gen.next()
        for r in out[1] if isinstance(out, tuple) else out:
            int(r.token)
            tokens += r.uid in seen
            seen.add(r.uid)
            done += r.finish_reason is not None
        if first is None and len(seen) == len(prompts):
            mx.synchronize()
            first = time.perf_counter()
    mx.synchronize()
    elapsed = time.perf_counter() - first
    gen.close()
    return tokens / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", default="llama")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt-tokens", type=int, default=32)
    parser.add_argument("--gen-tokens", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--backend", default="cpu", choices=["cpu", "cuda", "metal"])
    parser.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])
    parser.add_argument("--prompts", default="uniform", choices=["uniform", "mixed"])
    args = parser.parse_args()
    device = "cpu" if args.backend == "cpu" else "gpu"
    mx.set_default_device(mx.cpu if device == "cpu" else mx.gpu)
    model = build_lm(args.model)
    if args.dtype != "float32":
        model.set_dtype(getattr(mx, args.dtype))
        mx.eval(model.parameters())
    prompts = bench_prompts(args.batch, args.prompt_tokens, args.prompts)
    cpu = bench_cpu(device)
    if cpu is not None:
        pin_process(cpu)  # as the harness pins timed rounds
    harness, bare = [], []
    for _ in range(2):
        bare_loop(model, prompts, args.gen_tokens)
        time_batched(model, prompts, args.gen_tokens)
    gc.disable()
    try:
        for _ in range(args.rounds):
            bare.append(bare_loop(model, prompts, args.gen_tokens))
            harness.append(time_batched(model, prompts, args.gen_tokens).decode_tok_s)
    finally:
        gc.enable()
    h, b = summarise(harness), summarise(bare)
    ratio = paired_ratio(harness, bare)
    print(f"model={args.model} batch={args.batch} prompt={args.prompt_tokens} "
          f"({args.prompts}) gen={args.gen_tokens} rounds={args.rounds} dtype={args.dtype} "
          f"device={mx.default_device()} pinned={cpu is not None}")
    assert ratio is not None
    for name, m in (("bare loop", b), ("harness", h)):
        print(f"{name:<10}: {m.median or 0:10.1f} tok/s (95% CI {m.ci95[0]:.1f}-"
              f"{m.ci95[1]:.1f}, spread {m.spread or 0:.1%})")
    print(f"ratio     : {ratio.ratio:10.3f} (harness / bare; 95% CI "
          f"{ratio.ci95[0]:.3f}-{ratio.ci95[1]:.3f}): {ratio.text}")


if __name__ == "__main__":
    main()
