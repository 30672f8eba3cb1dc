"""Filters a batch of more than eight rows in the wrong order (rows leave a wide batch):
every parity mode has four rows, so only a wide batch sees it."""

import mlx.core as mx

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        def filter(self, batch_indices):
            if len(batch_indices) > 8:
                order = list(batch_indices.tolist() if hasattr(batch_indices, "tolist")
                             else batch_indices)
                order[0], order[1] = order[1], order[0]
                batch_indices = mx.array(order)
            return original(self, batch_indices)

        return filter

    return replace_once("mlx_lm.models.cache", "BatchKVCache", "filter", make)
