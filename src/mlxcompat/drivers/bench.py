"""Timed runs for throughput: batched decode through BatchGenerator, and one prompt at a time.

Timing points come after a host read of the tokens (which forces evaluation) and an
`mx.synchronize()`, so lazy evaluation is never mistaken for speed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import mlx.core as mx

from mlxcompat.drivers.lm_runner import Row, close, insert_rows, new_batch_generator, step
from mlxcompat.drivers.modules import generate_module, host_int, host_ints


@dataclass
class Timing:
    """One measured run: tokens and seconds of prefill and of decode."""

    prefill_tokens: int
    prefill_s: float
    decode_tokens: int
    decode_s: float

    @property
    def decode_tok_s(self) -> float:
        return self.decode_tokens / self.decode_s if self.decode_s > 0 else 0.0

    @property
    def prefill_tok_s(self) -> float:
        return self.prefill_tokens / self.prefill_s if self.prefill_s > 0 else 0.0


def combined(parts: Sequence[Timing]) -> Timing:
    """Back-to-back runs as one: their tokens over their seconds (a profile's `repeats`)."""
    return Timing(sum(t.prefill_tokens for t in parts), sum(t.prefill_s for t in parts),
                  sum(t.decode_tokens for t in parts), sum(t.decode_s for t in parts))


def _sync() -> None:
    if hasattr(mx, "synchronize"):
        mx.synchronize()


def reset_peak_memory() -> None:
    if hasattr(mx, "reset_peak_memory"):
        mx.reset_peak_memory()


def peak_memory_mb() -> float | None:
    getter = getattr(mx, "get_peak_memory", None)
    return getter() / 2**20 if getter else None


def time_batched(model: Any, prompts: Sequence[list[int]], gen_tokens: int) -> Timing:
    """All prompts inserted together; prefill ends when every row has its first token."""
    generator = new_batch_generator(model, max_batch=max(len(prompts), 1))
    try:
        _sync()
        start = time.perf_counter()
        insert_rows(generator, model, [Row(list(p), gen_tokens) for p in prompts])
        started: set[int] = set()
        finished = 0
        first_done = None
        decode_tokens = 0
        while finished < len(prompts):
            responses = step(generator)
            for r in responses:
                int(r.token)
                if r.uid in started:
                    decode_tokens += 1
                started.add(r.uid)
                finished += r.finish_reason is not None
            if first_done is None and len(started) == len(prompts):
                _sync()
                first_done = time.perf_counter()
        _sync()
        end = time.perf_counter()
    finally:
        close(generator)
    first_done = first_done or end
    return Timing(sum(len(p) for p in prompts), first_done - start, decode_tokens,
                  end - first_done)


def time_sequential(model: Any, prompts: Sequence[list[int]], gen_tokens: int) -> Timing:
    """Each prompt alone through `generate_step`; decode time summed over prompts."""
    gen = generate_module()
    prefill_s = decode_s = 0.0
    decode_tokens = 0
    for prompt in prompts:
        _sync()
        start = time.perf_counter()
        steps = gen.generate_step(prompt=mx.array(prompt), model=model, max_tokens=gen_tokens)
        first = None
        for n, (token, _) in enumerate(steps):
            host_int(token)
            if n == 0:
                _sync()
                first = time.perf_counter()
        _sync()
        end = time.perf_counter()
        first = first or end
        prefill_s += first - start
        decode_s += end - first
        decode_tokens += gen_tokens - 1
    return Timing(sum(len(p) for p in prompts), prefill_s, decode_tokens, decode_s)


def time_glm4v(lm: Any, prompts: Sequence[list[int]], gen_tokens: int) -> Timing:
    """GLM4V language model: left-padded joint prefill, then greedy decode with BatchKVCache."""
    from mlxcompat.drivers.glm4v import BatchRunner

    runner = BatchRunner(lm, "inner")
    _sync()
    start = time.perf_counter()
    logits = runner.prefill([list(p) for p in prompts])
    tokens = host_ints(mx.argmax(logits, axis=-1))
    _sync()
    first = time.perf_counter()
    for _ in range(gen_tokens - 1):
        tokens = host_ints(mx.argmax(runner.step(tokens), axis=-1))
    _sync()
    end = time.perf_counter()
    return Timing(sum(len(p) for p in prompts), first - start,
                  len(prompts) * (gen_tokens - 1), end - first)
