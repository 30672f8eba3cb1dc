"""Drive any mlx-vlm language model batched through its own cache kinds, and alone.

A model's `make_cache()` says what one sequence needs per layer (KVCache, RotatingKVCache for
sliding layers, ArraysCache for recurrent ones); the batch holds the batch form of each
(BatchKVCache / BatchRotatingKVCache with the left padding, ArraysCache with `left_padding`),
or, for rows prefilled alone, what each class's `merge` makes of them (as vllm-mlx's MLLM
batch generator does). Calls go through `LanguageModel.__call__` (the `outer` path), which
is what a server decodes with. The scenarios are GLM4V's (checks/glm4v.py): the runner has the
same prefill / step / filter / extend / merge.
"""

from __future__ import annotations

import importlib
from typing import Any

import mlx.core as mx

from mlxcompat.drivers.glm4v import BatchRunner, forward, reset_position_state
from mlxcompat.drivers.modules import host_int

PATH = "outer"


def _batch_classes() -> dict[str, Any]:
    """Batch cache classes as the installed mlx-vlm uses them (its vendored copy wins)."""
    for name in ("mlx_vlm.models.cache", "mlx_lm.models.cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "BatchKVCache"):
            return {"KVCache": module.BatchKVCache,
                    "RotatingKVCache": getattr(module, "BatchRotatingKVCache", None)}
    raise RuntimeError("neither mlx_vlm nor mlx_lm provides BatchKVCache")


def single_caches(lm: Any) -> list[Any]:
    if hasattr(lm, "make_cache"):
        return list(lm.make_cache())
    from mlxcompat.drivers.glm4v import cache_classes

    kv_cls, _ = cache_classes()
    return [kv_cls() for _ in lm.model.layers]


def batch_cache(single: Any, padding: list[int]) -> Any:
    """The batch form of one layer's single-sequence cache, left-padded by `padding`."""
    kind = type(single).__name__
    if kind == "ArraysCache":
        return type(single)(len(single.cache), left_padding=padding)
    batch = _batch_classes().get(kind)
    if batch is None:
        raise TypeError(f"no batch form of {kind} in this release")
    if kind == "RotatingKVCache":
        return batch(single.max_size, padding)
    return batch(padding)


def merged(caches: list[Any]) -> Any:
    """One layer's single caches merged into a batch, by the class's own `merge`."""
    first = caches[0]
    merge = getattr(type(first), "merge", None)
    if merge is None:
        merge = _batch_classes()[type(first).__name__].merge
    return merge(caches)


def run_single(lm: Any, prompt: list[int], steps: int, path: str = PATH) -> list[Any]:
    """The oracle: one prompt alone with the model's own caches; last-position logits of the
    prefill and of `steps - 1` greedy decode steps."""
    reset_position_state(lm)
    cache = single_caches(lm)
    logits = forward(lm, mx.array([prompt], dtype=mx.int32), cache, path)[0, -1]
    mx.eval(logits)
    out = [logits]
    for _ in range(steps - 1):
        token = host_int(mx.argmax(out[-1]))
        logits = forward(lm, mx.array([[token]], dtype=mx.int32), cache, path)[0, -1]
        mx.eval(logits)
        out.append(logits)
    return out


class VlmBatchRunner(BatchRunner):
    """GLM4V's BatchRunner with the model's own cache kinds instead of BatchKVCache only."""

    def __init__(self, lm: Any, path: str = PATH) -> None:
        super().__init__(lm, path)

    def _layers(self) -> int:
        return len(single_caches(self.lm))

    def _prefill_padded(self, prompts: list[list[int]]) -> tuple[list[Any], Any]:
        width = max(len(p) for p in prompts)
        padding = [width - len(p) for p in prompts]
        rows = [[0] * pad + list(p) for pad, p in zip(padding, prompts, strict=True)]
        cache = [batch_cache(c, padding) for c in single_caches(self.lm)]
        reset_position_state(self.lm)
        logits = forward(self.lm, mx.array(rows, dtype=mx.int32), cache, self.path)[:, -1]
        mx.eval(logits)
        return cache, logits

    def merge(self, prompts: list[list[int]]) -> Any:
        per_row, last = [], []
        for prompt in prompts:
            cache = single_caches(self.lm)
            reset_position_state(self.lm)
            last.append(forward(self.lm, mx.array([prompt], dtype=mx.int32), cache,
                                self.path)[0, -1])
            per_row.append(cache)
        self.cache = [merged(list(layer)) for layer in zip(*per_row, strict=True)]
        logits = mx.stack(last)
        mx.eval(logits)
        return logits
