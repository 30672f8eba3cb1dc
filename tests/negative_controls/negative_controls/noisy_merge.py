"""Adds a little noise to the keys whenever caches are merged (history, extend after merge)."""

import mlx.core as mx

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        func = original.__func__

        @classmethod
        def merge(cls, caches):
            merged = func(cls, caches)
            if merged.keys is not None:
                merged.keys = merged.keys + 1e-3 * mx.random.normal(merged.keys.shape)
            return merged

        return merge

    return replace_once("mlx_lm.models.cache", "BatchKVCache", "merge", make)
