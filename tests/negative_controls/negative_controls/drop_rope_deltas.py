"""Drops the per-row rope deltas a batching caller passes to GLM-4V's LanguageModel (as a
patch that rebuilt the call's arguments without them would): decode then falls back on the
deltas the model kept from its last prefill. Text rows and a batch prefilled together keep
the right ones; once an image row has joined a running batch, the model holds that row's
delta alone and every row decodes with it, so only `image-extend` sees it."""

from negative_controls._wrap import replace_once


def apply() -> bool:
    def make(original):
        def call(self, inputs, *args, **kwargs):
            kwargs.pop("rope_deltas", None)
            return original(self, inputs, *args, **kwargs)

        return call

    return replace_once("mlx_vlm.models.glm4v_moe.language", "LanguageModel", "__call__", make)
