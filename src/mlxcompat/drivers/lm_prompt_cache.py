"""Prompt-cache round trips of mlx-lm caches: `save_prompt_cache` / `load_prompt_cache`,
`can_trim_prompt_cache` / `trim_prompt_cache`, each followed by decoding.

A cache is given with the tokens it holds (`history`) and the token to feed next; decoding
after a round trip must equal decoding the same cache without it. A trim takes `k` tokens
off and feeds them again before decoding: where `can_trim_prompt_cache` says no, the cache
has said it cannot, as upstream's SSM caches do.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import mlx.core as mx
import numpy as np

from mlxcompat.drivers.modules import cache_module, host_ints

Decoded = tuple[list[list[int]], list[list[Any]]]


def decode(model: Any, cache: list[Any], tokens: Sequence[int], steps: int) -> Decoded:
    """Greedy-decode `steps` tokens per row from `cache`, feeding `tokens` first (one per row)."""
    y = mx.array(list(tokens))
    out: list[list[int]] = [[] for _ in tokens]
    scores: list[list[Any]] = [[] for _ in tokens]
    for _ in range(steps):
        logits = model(y[:, None], cache=cache)[:, -1, :]
        logprobs = (logits - mx.logsumexp(logits, axis=-1, keepdims=True)).astype(mx.float32)
        y = mx.argmax(logprobs, axis=-1)
        mx.eval(y, logprobs)
        for row, (t, lp) in enumerate(zip(host_ints(y), logprobs, strict=True)):
            out[row].append(t)
            scores[row].append(np.array(lp))
    return out, scores


def saved_and_loaded(cache: list[Any]) -> list[Any]:
    """`cache` written with save_prompt_cache and read back with load_prompt_cache."""
    module = cache_module()
    with tempfile.TemporaryDirectory(prefix="mlxcompat-cache-") as tmp:
        path = str(Path(tmp) / "cache.safetensors")
        module.save_prompt_cache(path, cache)
        return list(module.load_prompt_cache(path))


def trimmed_and_refed(model: Any, cache: list[Any], history: Sequence[int], k: int
                      ) -> tuple[list[Any] | None, str]:
    """(cache with its last `k` tokens trimmed and fed again, "") or (None, why not)."""
    module = cache_module()
    if not module.can_trim_prompt_cache(cache):
        return None, "can_trim_prompt_cache says no"
    trimmed = module.trim_prompt_cache(cache, k)
    if trimmed != k:
        raise AssertionError(f"trim_prompt_cache trimmed {trimmed} of {k} tokens")
    logits = model(mx.array([list(history[-k:])]), cache=cache)
    mx.eval(logits, [c.state for c in cache])
    return cache, ""


def dtypes_of(cache: Sequence[Any]) -> list[str]:
    """The dtype of every array a cache list holds (through `state`), in order."""
    found: list[str] = []
    stack: list[Any] = [c.state for c in cache]
    while stack:
        item = stack.pop(0)
        if isinstance(item, mx.array):
            found.append(str(item.dtype).removeprefix("mlx.core."))
        elif isinstance(item, list | tuple):
            stack[:0] = list(item)
    return found


def duplicate(cache: list[Any]) -> list[Any]:
    return copy.deepcopy(cache)
