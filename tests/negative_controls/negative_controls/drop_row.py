"""Drops one more row than asked whenever a finished row leaves the batch (filter)."""

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        def filter(self, batch_indices):
            if len(batch_indices) > 1:
                batch_indices = batch_indices[:-1]
            return original(self, batch_indices)

        return filter

    return replace_once("mlx_lm.models.cache", "BatchKVCache", "filter", make)
