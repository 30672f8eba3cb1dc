"""Shifts the positions of rows that join a running GLM4V batch (extend) by one."""

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        def extend(self, other):
            rows = other.offset.shape[0]
            original(self, other)
            self.offset[-rows:] = self.offset[-rows:] + 1

        return extend

    return replace_once("mlx_vlm.models.cache", "BatchKVCache", "extend", make)
