"""Continuous batching for SSM (Mamba / Mamba2 / linear-attention) caches in mlx-lm.

Our implementation of the `vllm_mlx.utils.mamba_cache` contract. Releases whose ArraysCache
cannot `extract` / `merge` crash as soon as a batched row finishes; the patch swaps the
generator's SSM caches for `BatchMambaCache`, teaches `_merge_caches` to merge them (history),
and makes the history test see SSM state. Unlike the seed, `ensure_mamba_support` applies the
patch where it is needed (decided by capability) and steps aside where batching is native.

Not feasible on those releases: history whose remaining prompt tails differ in length. The
generator right-pads the tails and those models have no length mask, so padding would run
through the recurrent state; `BatchMambaCache.prepare` refuses with a clear error instead.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from mlxcompat.drivers.capabilities import cache_module, generate_module, probe_lm
from mlxcompat.patches.status import PatchStatus

logger = logging.getLogger(__name__)
PATCH = "mamba"
_MARK = "_mlxcompat_mamba"
_originals: dict[tuple[Any, str], Any] = {}
_status: PatchStatus | None = None

try:
    import mlx.core as mx
    from mlx_lm.models.cache import ArraysCache

    _SingleCache: Any = getattr(cache_module(), "MambaCache", ArraysCache)
except ImportError:  # mlx-lm missing: the entry points report `unavailable`
    ArraysCache = object  # type: ignore[assignment,misc]
    _SingleCache = None


def _single(size: int) -> Any:
    """A one-row cache of the type the installed models make themselves."""
    if _SingleCache is not ArraysCache and size == 2:
        return _SingleCache()
    return ArraysCache(size)


class BatchMambaCache(_SingleCache or ArraysCache):  # type: ignore[misc]
    """An SSM cache with the batch operations BatchGenerator needs (extract, merge, prepare).

    It derives from MambaCache where that exists: Mamba v1 there writes its state back only
    into MambaCache instances, so a plain ArraysCache would silently freeze the state.
    """

    def __init__(self, left_padding: list[int] | None = None, size: int = 2) -> None:
        ArraysCache.__init__(self, size, left_padding=left_padding)
        # Some releases keep the list as given; masks index it as an array.
        self.left_padding = None if left_padding is None else mx.array(left_padding)

    @classmethod
    def from_cache(cls, cache: Any, left_padding: list[int] | None) -> BatchMambaCache:
        """Wrap a model-made SSM cache (same slots, same state) for batching."""
        batch = cls(left_padding, size=len(cache.cache))
        batch.cache = list(cache.cache)
        return batch

    def empty(self) -> bool:
        return self.cache[0] is None

    def extract(self, idx: int) -> Any:
        """Row `idx` as a standalone cache, usable again as `insert(..., caches=...)` history."""
        single = _single(len(self.cache))
        single.cache = [None if c is None else mx.contiguous(c[idx : idx + 1]) for c in self.cache]
        return single

    @classmethod
    def merge(cls, caches: list[Any]) -> BatchMambaCache:
        """Stack per-row caches; rows without state get zeros, which is what a fresh row holds."""
        merged = cls([0] * len(caches), size=len(caches[0].cache) if caches else 2)
        for slot in range(len(merged.cache)):
            present = [c.cache[slot] for c in caches if c.cache[slot] is not None]
            if not present:
                continue
            zeros = mx.zeros((1, *present[0].shape[1:]), present[0].dtype)
            rows = [zeros if c.cache[slot] is None else c.cache[slot] for c in caches]
            merged.cache[slot] = mx.concatenate(rows, axis=0)
        merged.left_padding = None
        return merged

    def prepare(self, lengths: Any = None, right_padding: Any = None, **_: Any) -> None:
        """History tails are right-padded; these releases' SSM layers cannot mask that padding."""
        if right_padding is not None and any(int(p) > 0 for p in right_padding):
            raise ValueError(
                "SSM history with unequal prompt tails is not supported on this mlx-lm: "
                "its SSM layers have no length mask, so right padding would corrupt the state"
            )

    def finalize(self) -> None:
        self.left_padding = None

    def filter(self, batch_indices: Any) -> None:
        self.cache = [None if c is None else c[batch_indices] for c in self.cache]
        self.left_padding = None

    def extend(self, other: Any) -> None:
        self.cache = [
            o if c is None else c if o is None else mx.concatenate([c, o])
            for c, o in zip(self.cache, other.cache, strict=True)
        ]
        self.left_padding = None


def _is_plain_ssm(cache: Any) -> bool:
    return isinstance(cache, ArraysCache) and not isinstance(cache, BatchMambaCache)


def _to_batch(cache: Any, left_padding: list[int]) -> Any:
    if _is_plain_ssm(cache):
        return BatchMambaCache.from_cache(cache, left_padding)
    inner = getattr(cache, "caches", None)
    if inner is not None:
        return type(cache)(*(_to_batch(c, left_padding) for c in inner))
    return cache


def _wrap_make_cache(original: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    def make_cache(model: Any, left_padding: list[int], *args: Any, **kwargs: Any) -> list[Any]:
        return [_to_batch(c, left_padding) for c in original(model, left_padding, *args, **kwargs)]

    return make_cache


def _wrap_merge_caches(original: Callable[[list[Any]], list[Any]]) -> Callable[..., list[Any]]:
    def merge_caches(caches: list[list[Any]]) -> list[Any]:
        if not caches:
            return []
        merged = []
        for layer in range(len(caches[0])):
            column = [c[layer] for c in caches]
            if isinstance(column[0], ArraysCache):
                merged.append(BatchMambaCache.merge(column))
            else:
                merged.append(original([[c] for c in column])[0])
        return merged

    return merge_caches


def _wrap_cache_length(original: Callable[[list[Any]], int]) -> Callable[[list[Any]], int]:
    def cache_length(cache: list[Any]) -> int:
        ssm_state = any(isinstance(c, ArraysCache) and c.cache[0] is not None for c in cache)
        return max(original(cache), int(ssm_state))

    return cache_length


def _replace(owner: Any, name: str, new: Any) -> None:
    _originals.setdefault((owner, name), getattr(owner, name))
    setattr(new, _MARK, True)
    setattr(owner, name, new)


def patch_mlx_lm_for_mamba() -> PatchStatus:
    """Install the patch unconditionally (the forced, legacy entry). Idempotent."""
    gen, cache_mod = generate_module(), cache_module()
    if not hasattr(gen, "_make_cache"):
        return PatchStatus(PATCH, "not-applicable", "this mlx-lm has no _make_cache to patch")
    patched = ["_make_cache"]
    if not getattr(gen._make_cache, _MARK, False):
        _replace(gen, "_make_cache", _wrap_make_cache(gen._make_cache))
    if hasattr(gen, "_merge_caches"):
        patched.append("_merge_caches")
        if not getattr(gen._merge_caches, _MARK, False):
            _replace(gen, "_merge_caches", _wrap_merge_caches(gen._merge_caches))
    if probe_lm().drops_ssm_history or getattr(cache_mod.cache_length, _MARK, False):
        patched.append("cache_length")
        if not getattr(cache_mod.cache_length, _MARK, False):
            _replace(cache_mod, "cache_length", _wrap_cache_length(cache_mod.cache_length))
    return PatchStatus(PATCH, "applied", "patched " + ", ".join(patched))


def _decide() -> PatchStatus:
    if _SingleCache is None:
        return PatchStatus(PATCH, "unavailable", "mlx-lm is not importable")
    decision, why = probe_lm().ssm_patch_decision()
    if decision != "needed":
        return PatchStatus(PATCH, decision, why)  # type: ignore[arg-type]
    return patch_mlx_lm_for_mamba()


def ensure_mamba_support() -> PatchStatus:
    """Apply the patch only where this mlx-lm needs it; a second call changes nothing."""
    global _status
    if _status is None:
        try:
            _status = _decide()
        except Exception as exc:
            _status = PatchStatus(PATCH, "error", f"{type(exc).__name__}: {exc}")
        logger.info("[mlxcompat] mamba cache patch: %s (%s)", _status.status, _status.detail)
    return _status


def unpatch() -> None:
    """Restore every object the patch replaced, by identity."""
    global _status
    for (owner, name), original in _originals.items():
        setattr(owner, name, original)
    _originals.clear()
    _status = None
