"""Trims one token less from a KV cache than it says it did: a server that reuses a longer
cached prompt for a shorter shared prefix then decodes at the wrong positions."""

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        def trim(self, n):
            trimmed = original(self, max(0, n - 1))
            return trimmed + 1 if n > 0 else trimmed

        return trim

    return replace_once("mlx_lm.models.cache", "KVCache", "trim", make)
