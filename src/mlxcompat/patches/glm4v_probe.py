"""Does the installed GLM4V code batch a BatchKVCache correctly? The patch's own probe.

Each path is called once on a recorder that plays the model (no weights, no compute), with a
two-row batch cache whose first row carries two columns of left padding. Right means: every
row continues from its own offset, and the padding mask reaches the layers. The harness
judges the patch with its own, separate probe. Self-contained: mlx and mlx_vlm only.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace
from typing import Any

import mlx.core as mx


def batch_cache_class() -> Any:
    for name in ("mlx_vlm.models.cache", "mlx_lm.models.cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "BatchKVCache"):
            return module.BatchKVCache
    return None


class _Norm:
    weight = mx.zeros((2,))

    def __call__(self, hidden: Any) -> Any:
        return hidden


class _Recorder:
    """Enough of a GLM4VModel for its `__call__` to run: records positions and the mask."""

    start_idx, num_layers = 0, 1

    def __init__(self) -> None:
        self.positions: Any = None
        self.mask: Any = None
        self.norm = _Norm()
        self.layers = [self._layer]

    def embed_tokens(self, tokens: Any) -> Any:
        return mx.zeros((*tokens.shape, 2))

    def rotary_emb(self, hidden: Any, position_ids: Any) -> None:
        self.positions = position_ids

    def _layer(self, hidden: Any, mask: Any, cache: Any, embeddings: Any) -> Any:
        self.mask = mask
        return hidden


def inner_is_right(call: Any) -> bool:
    """GLM4VModel.__call__ gives each padded row its own positions and the padding mask."""
    batch = batch_cache_class()
    if batch is None:
        return True
    model = _Recorder()
    cache = batch([2, 0])
    try:
        call(model, mx.zeros((2, 3), dtype=mx.int32), cache=[cache])
    except Exception:
        return False
    if model.positions is None or model.mask is None:
        return False
    start = mx.broadcast_to(model.positions, (3, 2, 3))[0, :, 0]
    expected_mask = cache.make_mask(3)
    same_mask = mx.array_equal(mx.broadcast_to(model.mask, expected_mask.shape), expected_mask)
    return bool(mx.array_equal(start, cache.offset).item()) and bool(same_mask.item())


def outer_is_right(call: Any, language_model: type) -> bool:
    """LanguageModel.__call__ decodes each padded row one past its own last prefill position:
    called without a mask, and called the way a batching caller does for image rows (the
    attention mask at prefill, the rope deltas it left passed back at decode)."""
    return all(_outer_decodes_on(call, language_model, masked) for masked in (False, True))


def _outer_decodes_on(call: Any, language_model: type, masked: bool) -> bool:
    batch = batch_cache_class()
    if batch is None:
        return True
    seen: list[Any] = []

    def inner(inputs: Any, **kw: Any) -> Any:
        seen.append(kw.get("position_ids"))
        return inputs

    outer: Any = language_model
    model = SimpleNamespace(
        _rope_deltas=None, _position_ids=None,
        config=SimpleNamespace(vision_config=SimpleNamespace(spatial_merge_size=2),
                               image_token_id=-1, video_token_id=-2, vision_start_token_id=-3),
        model=inner, lm_head=lambda hidden: hidden)
    model.get_rope_index = lambda *args: outer.get_rope_index(model, *args)
    cache = batch([2, 0])
    attention = {"mask": mx.array([[0, 0, 1], [1, 1, 1]])} if masked else {}
    try:
        call(model, mx.zeros((2, 3), dtype=mx.int32), cache=[cache], **attention)
        deltas = {"rope_deltas": model._rope_deltas} if masked else {}
        if masked and model._rope_deltas is None:
            return True  # no deltas kept: a caller has none to pass back
        cache.offset = cache.offset + 3
        cache._idx = 3
        call(model, mx.zeros((2, 1), dtype=mx.int32), cache=[cache], **deltas)
        prefill, decode = (mx.broadcast_to(p, (3, 2, p.shape[-1])) for p in seen)
        return bool(mx.all(decode[0, :, 0] == prefill[0, :, -1] + 1).item()) and bool(
            (prefill[0, 0, -1] - prefill[0, 1, -1]).item() == -2)
    except Exception:
        return False
