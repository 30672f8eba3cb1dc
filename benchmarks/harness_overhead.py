"""Harness overhead: mlxcompat's timed batched run vs a bare, hand-written BatchGenerator loop.

Same model (tiny llama), batch, prompt and generation lengths; the two are interleaved round
by round so drift in machine load hits both. Prints the medians and their ratio.

    .nox/matrix-mlx-lm-0-32-2/bin/python benchmarks/harness_overhead.py --batch 8 --rounds 15
"""

from __future__ import annotations

import argparse
import statistics
import time

import mlx.core as mx

from mlxcompat.bench import bench_prompts
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models import build_model


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
    args = parser.parse_args()
    model = build_model(args.model)
    prompts = bench_prompts(args.batch, args.prompt_tokens)
    harness, bare = [], []
    for _ in range(2):
        bare_loop(model, prompts, args.gen_tokens)
        time_batched(model, prompts, args.gen_tokens)
    for _ in range(args.rounds):
        bare.append(bare_loop(model, prompts, args.gen_tokens))
        harness.append(time_batched(model, prompts, args.gen_tokens).decode_tok_s)
    h, b = statistics.median(harness), statistics.median(bare)
    print(f"model={args.model} batch={args.batch} prompt={args.prompt_tokens} "
          f"gen={args.gen_tokens} rounds={args.rounds}")
    print(f"bare loop : {b:10.1f} tok/s (median)")
    print(f"harness   : {h:10.1f} tok/s (median)")
    print(f"ratio     : {h / b:10.3f} (harness / bare)")


if __name__ == "__main__":
    main()
