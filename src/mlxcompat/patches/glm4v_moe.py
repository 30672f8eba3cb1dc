"""Runtime patch so mlx-vlm's GLM-4.6V (glm4v_moe) text model decodes BatchKVCache batches.

Upstream `GLM4VModel.__call__` derives RoPE positions with `mx.arange(cache[0].offset, ...)`.
A BatchKVCache keeps one offset per row (an array), which `mx.arange` rejects. Taking the
largest offset runs and even holds while all rows share one padded timeline, but gives rows the
wrong rotary phase once rows leave (filter), join (extend) or are merged. Up to mlx-vlm 0.4.4
the body also hands the cache list to a mask helper that expects one cache, so the left-padding
mask is silently dropped.

The patch gives each row its own positions (`offset[row] + arange(L)`, which keeps them
consistent through filter, extend and merge, since BatchKVCache moves offsets with the rows)
and always builds the padding mask from `cache[0]`. It only steps in for batched caches and
hands everything to the original body as explicit `position_ids` / `mask`, so single-sequence
calls stay byte-identical. The outer `LanguageModel.__call__` computes its own text positions
ignoring the padding; when a probe shows that, a second, equally narrow wrapper is installed.
It also steps in for a text-only batch prefilled with its (rows, length) attention mask, the
way a batching caller passes it for image rows: upstream then keeps minus each row's padding
as its rope delta, which decode adds to offsets that already leave the padding out; ours
keeps zeros. Calls with image grids or rope deltas go to upstream untouched.
Each wrapper is installed only where a behavioural probe of the installed code finds it needed.

Threads: the entry points, `unpatch` and the status hold one lock; the first caller applies,
the others wait and get the same status. Status is read from the targets by identity (a
marker would lie once another patch replaces ours). Beside another server's patch (e.g.
vllm-mlx's, which replaces `GLM4VModel.__call__` and sets `_batch_patched`):
- ours applied on top of it: the probe runs on what is installed; where that is still wrong
  we wrap it (our wrapper hands it explicit positions and mask) and the status names it;
  `unpatch()` puts the other patch's object back, its markers untouched;
- another applied on top of ours: the status says `replaced`; a later apply changes nothing
  (no tug of war); `unpatch()` restores only the targets that still hold ours and leaves the
  other patch's objects and markers in place.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import threading
from typing import Any

from mlxcompat.patches import glm4v_probe
from mlxcompat.patches.journal import Entry, Journal, describe
from mlxcompat.patches.status import PatchStatus, replaced

logger = logging.getLogger(__name__)

PATCH = "glm4v"
_PATHS = {"GLM4VModel": "inner", "LanguageModel": "outer"}
_journal = Journal()
_lock = threading.RLock()
_last_error: str = ""


def _language_module() -> Any | None:
    try:
        return importlib.import_module("mlx_vlm.models.glm4v_moe.language")
    except ImportError:
        return None


def _vlm_installed() -> bool:
    return importlib.util.find_spec("mlx_vlm") is not None


def _is_batched(cache: Any) -> bool:
    """True for a cache list whose first entry keeps per-row offsets (BatchKVCache & co)."""
    import mlx.core as mx

    if not cache or cache[0] is None:
        return False
    offset = getattr(cache[0], "offset", None)
    return isinstance(offset, mx.array) and offset.ndim >= 1


def _row_positions(offset: Any, length: int) -> Any:
    """(3, B, L) positions: every row continues from its own offset in all three mrope axes."""
    import mlx.core as mx

    rows = offset.astype(mx.int32)[:, None] + mx.arange(length, dtype=mx.int32)[None]
    return mx.broadcast_to(rows[None], (3, *rows.shape))


def _sequence_length(inputs: Any, inputs_embeds: Any) -> int:
    return int((inputs_embeds if inputs_embeds is not None else inputs).shape[1])


def _inner_wrapper(original: Any) -> Any:
    @functools.wraps(original)
    def call(self, inputs, inputs_embeds=None, cache=None, mask=None, position_ids=None):
        if _is_batched(cache):
            length = _sequence_length(inputs, inputs_embeds)
            if position_ids is None:
                position_ids = _row_positions(cache[0].offset, length)
            if mask is None and hasattr(cache[0], "make_mask"):
                mask = cache[0].make_mask(length)
        kwargs = {"inputs_embeds": inputs_embeds, "mask": mask, "position_ids": position_ids}
        return original(self, inputs, cache=cache, **kwargs)

    return call


def _text_only_rope(model: Any) -> bool:
    """No multimodal rope deltas are pending, so plain per-row positions are the right ones."""
    import mlx.core as mx

    deltas = getattr(model, "_rope_deltas", None)
    return deltas is None or not bool(mx.any(deltas != 0).item())


_MEDIA_KWARGS = ("position_ids", "pixel_values", "image_grid_thw", "video_grid_thw", "rope_deltas")


def _attention_only(mask: Any, inputs: Any) -> bool:
    """No mask, or the (rows, length) attention mask a batching caller passes at prefill."""
    return mask is None or (getattr(mask, "ndim", 0) == 2 and tuple(mask.shape) == tuple(
        getattr(inputs, "shape", ())))


def _outer_wrapper(original: Any) -> Any:
    @functools.wraps(original)
    def call(self, inputs, inputs_embeds=None, mask=None, cache=None, **kwargs):
        steps_in = (
            _is_batched(cache)
            and _attention_only(mask, inputs)
            and all(kwargs.get(name) is None for name in _MEDIA_KWARGS)
            and _text_only_rope(self)
        )
        if steps_in:
            length = _sequence_length(inputs, inputs_embeds)
            kwargs["position_ids"] = _row_positions(cache[0].offset, length)
        out = original(self, inputs, inputs_embeds=inputs_embeds, mask=mask, cache=cache,
                       **kwargs)
        if steps_in and mask is not None and getattr(self, "_rope_deltas", None) is None:
            import mlx.core as mx

            # Text rows at their own positions need no delta: a caller that keeps the model's
            # deltas and passes them back at decode gets zeros, not minus each row's padding.
            self._rope_deltas = mx.zeros((inputs.shape[0], 1), dtype=mx.int32)
        return out

    return call


def _wrapped(entry: Entry) -> str:
    """'inner GLM4VModel.__call__', plus what it wraps when that is not mlx-vlm's own."""
    text = f"{_PATHS[entry.owner.__name__]} {entry.label}"
    inner = getattr(entry.installed, "__wrapped__", None)
    if not str(getattr(inner, "__module__", "")).startswith("mlx_vlm."):
        text += f" over {describe(inner)}"
    return text


def _needed(language: Any) -> list[str]:
    """Which paths the installed code gets wrong for batched caches ("inner", "outer")."""
    model, outer = language.GLM4VModel, language.LanguageModel
    needed = []
    if not glm4v_probe.inner_is_right(model.__call__):
        needed.append("inner")
    if not glm4v_probe.outer_is_right(outer.__call__, outer):
        needed.append("outer")
    return needed


def patch_glm4v_moe_for_batching() -> bool:
    """Install the wrappers the installed mlx-vlm needs; True when batching is supported now.

    False when mlx-vlm or its glm4v_moe module is missing, or when another patch has since
    replaced ours. Calling it again is a no-op; a failure part-way restores what was
    replaced before it propagates.
    """
    language = _language_module()
    if language is None:
        logger.debug("[glm4v] mlx_vlm glm4v_moe is not importable; nothing to patch")
        return False
    with _lock:
        if _journal:
            return replaced(PATCH, _journal) is None
        needed = _needed(language)
        with _journal.atomic():
            if "inner" in needed:
                _journal.wrap(language.GLM4VModel, "__call__", _inner_wrapper)
            if "outer" in needed:
                _journal.wrap(language.LanguageModel, "__call__", _outer_wrapper)
        return True


def unpatch() -> None:
    """Put back every original whose target still holds ours (by identity); a target that
    another patch has replaced since keeps that patch's object, and its markers."""
    global _last_error
    with _lock:
        left = _journal.undo()
        _last_error = ""
    if left:
        logger.info("[glm4v] unpatch left %s to the patch installed over ours", ", ".join(left))


def glm4v_patch_status() -> PatchStatus:
    """Where GLM4V batching stands now, in DESIGN's vocabulary (applies nothing).

    not-applicable: mlx-vlm is not installed, or this release has no glm4v_moe;
    applied: our wrappers are installed; replaced: another patch sits on one of them now;
    skipped: the installed code already batches right; error: the patch raised, or it is
    needed and not installed.
    """
    language = _language_module()
    if language is None:
        if not _vlm_installed():
            return PatchStatus(PATCH, "not-applicable", "mlx-vlm is not installed")
        return PatchStatus(PATCH, "not-applicable", "this mlx-vlm has no glm4v_moe model")
    with _lock:
        if _last_error:
            return PatchStatus(PATCH, "error", _last_error)
        lost = replaced(PATCH, _journal)
        if lost is not None:
            return lost
        if _journal:
            parts = [_wrapped(entry) for entry, _ in _journal.standings()]
            return PatchStatus(PATCH, "applied", "wraps " + " and ".join(parts))
        needed = _needed(language)
    if not needed:
        return PatchStatus(PATCH, "skipped", "installed GLM4V code already batches correctly")
    wrong = " and ".join(needed)
    return PatchStatus(PATCH, "error", f"{wrong} path mishandles BatchKVCache; patch not applied")


def ensure_glm4v_support() -> PatchStatus:
    """Apply the patch where needed and return (and log) the resulting status."""
    global _last_error
    with _lock:
        try:
            patch_glm4v_moe_for_batching()
            _last_error = ""
        except Exception as exc:
            _last_error = f"{type(exc).__name__}: {exc}"
        status = glm4v_patch_status()
    logger.info("[glm4v] %s: %s", status.status, status.detail)
    return status
