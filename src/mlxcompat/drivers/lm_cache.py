"""Cache-level operations of the batching path: prefill alone, merge, extract, decode.

Uses the installed `_merge_caches` (present in every release with BatchGenerator, and the
hook the patches replace), so the contract is tested on the code the generator runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import mlx.core as mx

from mlxcompat.drivers.modules import cache_module, generate_module, host_int, host_ints
from mlxcompat.errors import SkipCheck


def prefill_alone(model: Any, prompt: Sequence[int]) -> tuple[list[Any], int]:
    """One prompt through a fresh single-sequence cache; returns the cache and its greedy token."""
    cache = cache_module().make_prompt_cache(model)
    logits = model(mx.array([list(prompt)]), cache=cache)
    mx.eval(logits, [c.state for c in cache])
    return cache, host_int(mx.argmax(logits[0, -1]))


def merge_rows(rows: Sequence[list[Any]]) -> list[Any]:
    """Per-row caches -> one batch cache, through the generator's own `_merge_caches`."""
    merge = getattr(generate_module(), "_merge_caches", None)
    if merge is None:
        raise SkipCheck("this mlx-lm has no _merge_caches: batch caches cannot be merged")
    return list(merge([list(r) for r in rows]))


def extract_rows(batch_cache: Sequence[Any], batch_size: int) -> list[list[Any]]:
    """Split a batch cache into per-row caches with each layer's `extract`."""
    return [[c.extract(i) for c in batch_cache] for i in range(batch_size)]


def decode_steps(
    model: Any, batch_cache: list[Any], first_tokens: Sequence[int], steps: int
) -> tuple[list[list[int]], list[list[Any]]]:
    """Greedy-decode `steps` tokens per row; returns per-row tokens and per-row log-softmax."""
    import numpy as np

    y = mx.array(list(first_tokens))
    tokens: list[list[int]] = [[] for _ in first_tokens]
    scores: list[list[Any]] = [[] for _ in first_tokens]
    for _ in range(steps):
        logits = model(y[:, None], cache=batch_cache)[:, -1, :]
        logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        y = mx.argmax(logprobs, axis=-1)
        mx.eval(y, logprobs)
        for row, (t, lp) in enumerate(zip(host_ints(y), logprobs, strict=True)):
            tokens[row].append(t)
            scores[row].append(np.array(lp.astype(mx.float32)))  # numpy has no bfloat16
    return tokens, scores
