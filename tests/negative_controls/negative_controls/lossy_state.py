"""A KV cache restored from its state (load_prompt_cache) loses its last position: only a
save/load round trip of a prompt cache sees it."""

from negative_controls._wrap import replace_once


class _Property(property):
    """A property that can carry the control's marker."""


def apply() -> bool:
    def make(original):
        def setter(self, value):
            keys, values = value[0], value[1]
            original.fset(self, (keys[..., :-1, :], values[..., :-1, :], *value[2:]))

        return _Property(original.fget, setter)

    return replace_once("mlx_lm.models.cache", "KVCache", "state", make)
