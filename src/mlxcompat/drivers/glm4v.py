"""The only code that knows how mlx-vlm's GLM4V (glm4v_moe) API drifts between releases.

Everything here asks the installed release what it does (where a class lives, which body
`GLM4VModel.__call__` has, whether a helper takes a cache list) instead of reading versions.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import inspect
import textwrap
from types import ModuleType
from typing import Any

import mlx.core as mx

from mlxcompat.drivers.drift_scan import GLM4V_BODIES
from mlxcompat.drivers.modules import host_int
from mlxcompat.errors import SkipCheck

PATHS: tuple[str, ...] = ("inner", "outer")

_POSITION_STATE = ("_rope_deltas", "_position_ids")

# An image of grid (t, h, w) patches occupies t·(h/2)·(w/2) tokens after the 2×2 merge; a grid
# of unequal sides gives its rows a rope delta of their own (1·4·3 tokens take 4 positions).
IMAGE_GRID = (1, 8, 6)
MERGE = 2


def image_prompt(before: list[int], after: list[int]) -> list[int]:
    """Text, then an image (vision start and its placeholder tokens), then text: the tokens
    `get_rope_index` reads to give the image rows their 3-D positions."""
    from mlxcompat.models.glm4v import MEDIA_TOKENS

    t, h, w = IMAGE_GRID
    count = t * (h // MERGE) * (w // MERGE)
    return [*before, MEDIA_TOKENS["vision_start_token_id"],
            *[MEDIA_TOKENS["image_token_id"]] * count, *after]


def takes_rope_deltas(lm: Any) -> bool:
    """Whether `LanguageModel.__call__` reads per-row rope deltas from its caller (mlx-vlm
    0.5.0 on); before, a batching caller can only set the model's own `_rope_deltas`."""
    call = inspect.unwrap(type(lm).__call__)
    return _reads_rope_deltas(call)


@functools.cache
def _reads_rope_deltas(call: Any) -> bool:  # the source is read once per body, not per step
    return "rope_deltas" in inspect.getsource(call)


def _inner_at(lm: Any, tokens: Any, cache: list[Any], positions: Any) -> Any:
    """Logits of the inner GLM4VModel handed explicit positions (the caller's part)."""
    return lm.lm_head(lm.model(tokens, cache=cache, position_ids=positions))


def glm4v_language_module() -> ModuleType:
    """`mlx_vlm.models.glm4v_moe.language`, or SkipCheck when this environment lacks it."""
    try:
        return importlib.import_module("mlx_vlm.models.glm4v_moe.language")
    except ImportError as exc:
        raise SkipCheck(f"mlx_vlm glm4v_moe is not available here: {exc}") from exc


def cache_classes() -> tuple[Any, Any]:
    """(KVCache, BatchKVCache) as the installed mlx-vlm uses them.

    mlx-vlm re-exports mlx-lm's classes up to 0.6.3 and vendors its own copy later; the copy
    the model code sees is the one to test, so mlx_vlm.models.cache wins over mlx_lm.
    """
    for name in ("mlx_vlm.models.cache", "mlx_lm.models.cache"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        if hasattr(module, "BatchKVCache") and hasattr(module, "KVCache"):
            return module.KVCache, module.BatchKVCache
    raise SkipCheck("neither mlx_vlm nor mlx_lm provides BatchKVCache")


def _original_call() -> Any:
    call = glm4v_language_module().GLM4VModel.__call__
    return inspect.unwrap(call)


def call_body_digest() -> str:
    """Short sha256 of the upstream `GLM4VModel.__call__` source, whitespace-normalised.

    Our patch wraps the method with `functools.wraps`, so this still names the upstream body.
    """
    source = textwrap.dedent(inspect.getsource(_original_call()))
    lines = [line.rstrip() for line in source.splitlines() if line.strip()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()[:12]


def call_body_kind() -> str:
    """Label of the installed upstream body: cache-list-mask, cache0-mask or unknown."""
    return GLM4V_BODIES.get(call_body_digest(), "unknown")


def reset_position_state(lm: Any) -> None:
    """Forget the rope state a `LanguageModel` keeps between calls (it leaks across prompts)."""
    for name in _POSITION_STATE:
        if hasattr(lm, name):
            setattr(lm, name, None)


def forward(lm: Any, tokens: Any, cache: list[Any], path: str) -> Any:
    """Logits (B, L, V) for `tokens` through the inner GLM4VModel or the outer LanguageModel.

    The two signatures order `cache` and `mask` differently, so everything goes by keyword.
    """
    if path == "inner":
        return lm.lm_head(lm.model(tokens, cache=cache))
    if path == "outer":
        out = lm(tokens, cache=cache)
        return getattr(out, "logits", out)
    raise ValueError(f"unknown GLM4V path {path!r}; expected one of {PATHS}")


def _tokens(rows: list[list[int]]) -> Any:
    return mx.array(rows, dtype=mx.int32)


def run_single(lm: Any, prompt: list[int], steps: int, path: str,
               grid: tuple[int, ...] | None = None) -> list[Any]:
    """The oracle: one prompt alone with plain KVCaches; last-position logits of each step.

    Step 0 is the prefill (with its image's grid, if it has one: the model keeps that row's
    rope delta for the decode steps), then `steps - 1` greedy decode steps; (V,) arrays.
    """
    kv_cls, _ = cache_classes()
    reset_position_state(lm)
    cache = [kv_cls() for _ in lm.model.layers]
    if grid and path == "inner":
        return _single_inner_image(lm, prompt, steps, grid, cache)
    if grid:
        out = lm(_tokens([prompt]), cache=cache, image_grid_thw=mx.array([grid]))
        logits = getattr(out, "logits", out)[0, -1]
    else:
        logits = forward(lm, _tokens([prompt]), cache, path)[0, -1]
    mx.eval(logits)
    out = [logits]
    for _ in range(steps - 1):
        token = host_int(mx.argmax(out[-1]))
        logits = forward(lm, _tokens([[token]]), cache, path)[0, -1]
        mx.eval(logits)
        out.append(logits)
    return out


def _single_inner_image(lm: Any, prompt: list[int], steps: int, grid: tuple[int, ...],
                        cache: list[Any]) -> list[Any]:
    """An image prompt alone through the inner model: its positions from the model's own
    `get_rope_index`, then each decode step at offset plus the row's rope delta."""
    positions, delta = lm.get_rope_index(_tokens([prompt]), mx.array([grid]), None, None)
    out = [_inner_at(lm, _tokens([prompt]), cache, positions)[0, -1]]
    mx.eval(out[-1])
    for _ in range(steps - 1):
        at = mx.array(cache[0].offset).reshape(1, 1) + mx.array(delta).reshape(1, 1)
        positions = mx.broadcast_to(at[None], (3, 1, 1))
        step = _tokens([[host_int(mx.argmax(out[-1]))]])
        out.append(_inner_at(lm, step, cache, positions)[0, -1])
        mx.eval(out[-1])
    return out


class BatchRunner:
    """A batch of rows decoded jointly through BatchKVCaches, with filter / extend / merge.

    Each method returns the last-position logits (rows, V) it produced, in current row order.
    """

    def __init__(self, lm: Any, path: str) -> None:
        self.lm = lm
        self.path = path
        self.cache: list[Any] = []
        self.deltas: Any = None  # (rows, 1) rope deltas of a batch with images

    def _layers(self) -> int:
        return len(self.lm.model.layers)

    def _left_padded(self, prompts: list[list[int]]) -> tuple[list[int], Any, list[Any]]:
        """(padding, left-padded token rows, fresh BatchKVCaches), the model's rope state
        forgotten: the start of every batched prefill."""
        _, batch_cls = cache_classes()
        width = max(len(p) for p in prompts)
        padding = [width - len(p) for p in prompts]
        rows = _tokens([[0] * pad + list(p) for pad, p in zip(padding, prompts, strict=True)])
        reset_position_state(self.lm)
        return padding, rows, [batch_cls(padding) for _ in range(self._layers())]

    def _prefill_padded(self, prompts: list[list[int]]) -> tuple[list[Any], Any]:
        _, rows, cache = self._left_padded(prompts)
        logits = forward(self.lm, rows, cache, self.path)[:, -1]
        mx.eval(logits)
        return cache, logits

    def prefill(self, prompts: list[list[int]]) -> Any:
        """Left-pad the prompts and prefill them as one batch."""
        self.cache, logits = self._prefill_padded(prompts)
        return logits

    def step(self, tokens: list[int]) -> Any:
        """Feed one token per row."""
        logits = forward(self.lm, _tokens([[t] for t in tokens]), self.cache, self.path)[:, -1]
        mx.eval(logits)
        return logits

    def prefill_media(self, prompts: list[list[int]],
                      grids: list[tuple[int, ...] | None]) -> Any:
        """Left-padded prefill of rows with and without images through the outer model, as
        mlx-vlm's own batch generator runs it: the image grids and the attention mask (which
        `get_rope_index` reads) go in, and each row's rope delta is kept for its decode."""
        self.cache, logits, self.deltas = self._prefill_media(prompts, grids)
        return logits

    def _prefill_media(self, prompts: list[list[int]], grids: list[tuple[int, ...] | None]
                       ) -> tuple[list[Any], Any, Any]:
        padding, rows, cache = self._left_padded(prompts)
        attention = mx.array([[0] * pad + [1] * len(p) for pad, p in zip(padding, prompts,
                                                                         strict=True)])
        images = [list(g) for g in grids if g]
        grid = mx.array(images) if images else None
        if self.path == "inner":  # the caller's part: the model's own positions, handed in
            positions, found = self.lm.get_rope_index(rows, grid, None, attention)
            logits = _inner_at(self.lm, rows, cache, positions)[:, -1]
        else:
            media = {"image_grid_thw": grid} if images else {}
            out = self.lm(rows, mask=attention, cache=cache, **media)
            logits = getattr(out, "logits", out)[:, -1]
            found = getattr(self.lm, "_rope_deltas", None)
        deltas = mx.zeros((len(prompts), 1), dtype=mx.int32) if found is None else found
        if deltas.size != len(prompts):
            raise RuntimeError(f"get_rope_index gave {deltas.size} rope delta(s) for a batch of "
                               f"{len(prompts)} rows: this release keeps one delta per batch, "
                               "so rows with different image layouts cannot share one")
        deltas = deltas.reshape(len(prompts), 1)
        mx.eval(logits, deltas)
        return cache, logits, deltas

    def step_media(self, tokens: list[int]) -> Any:
        """One token per row, each row at its own offset plus its own rope delta (inner
        path: those positions handed in; outer: the deltas passed as `rope_deltas` where the
        release reads them, else set as the model's state)."""
        step = _tokens([[t] for t in tokens])
        if self.path == "inner":
            offsets = mx.array(self.cache[0].offset).reshape(-1, 1)
            positions = mx.broadcast_to((offsets + self.deltas)[None], (3, len(tokens), 1))
            logits = _inner_at(self.lm, step, self.cache, positions)[:, -1]
            mx.eval(logits)
            return logits
        media: dict[str, Any] = {}
        if takes_rope_deltas(self.lm):
            media["rope_deltas"] = self.deltas
        else:
            self.lm._rope_deltas = self.deltas
        out = self.lm(step, cache=self.cache, **media)
        logits = getattr(out, "logits", out)[:, -1]
        mx.eval(logits)
        return logits

    def extend_media(self, prompt: list[int], grid: tuple[int, ...] | None) -> Any:
        """Prefill a new row (with its image) alone, then append it and its rope delta."""
        new_cache, logits, deltas = self._prefill_media([prompt], [grid])
        for layer_cache, other in zip(self.cache, new_cache, strict=True):
            layer_cache.extend(other)
        self.deltas = mx.concatenate([self.deltas, deltas], axis=0)
        return logits

    def filter(self, keep: list[int]) -> None:
        """Keep only the given row indices (rows that finished leave the batch)."""
        for layer_cache in self.cache:
            layer_cache.filter(mx.array(keep, dtype=mx.int32))

    def extend(self, prompt: list[int]) -> Any:
        """Prefill a new row as its own batch, then append it to the running batch."""
        new_cache, logits = self._prefill_padded([prompt])
        for layer_cache, other in zip(self.cache, new_cache, strict=True):
            layer_cache.extend(other)
        return logits

    def merge(self, prompts: list[list[int]]) -> Any:
        """Prefill each prompt alone with plain KVCaches, then merge them into one batch."""
        kv_cls, batch_cls = cache_classes()
        per_row: list[list[Any]] = []
        last: list[Any] = []
        for prompt in prompts:
            cache = [kv_cls() for _ in range(self._layers())]
            reset_position_state(self.lm)
            last.append(forward(self.lm, _tokens([prompt]), cache, self.path)[0, -1])
            per_row.append(cache)
        self.cache = [batch_cls.merge(list(layer)) for layer in zip(*per_row, strict=True)]
        logits = mx.stack(last)
        mx.eval(logits)
        return logits
