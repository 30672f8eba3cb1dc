"""Merges KV caches into float32 whatever the model's dtype (twice the memory of a
bfloat16 cache, other numerics): exact in float32, so only a dtype check can see it."""

import mlx.core as mx

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        func = original.__func__

        @classmethod
        def merge(cls, caches):
            merged = func(cls, caches)
            if merged.keys is not None:
                merged.keys = merged.keys.astype(mx.float32)
                merged.values = merged.values.astype(mx.float32)
            return merged

        return merge

    return replace_once("mlx_lm.models.cache", "BatchKVCache", "merge", make)
