"""SSM caches that BatchGenerator can batch: extract, merge, filter, extend, history length.

Two situations, each installed only where the patch's probe sees it:
- the generator keeps history and extracts finished rows, but ArraysCache cannot extract or
  merge: the generator's SSM caches become `BatchMambaCache` (through `_make_cache` and
  `_merge_caches`), and `cache_length` learns that an SSM cache with state is not empty;
- ArraysCache can, but merging MambaCaches gives a 0-d `left_padding` and extracting one
  gives a plain ArraysCache (into which Mamba v1 never writes back): both are corrected.
Padding inside the state is the segmented prefill's job (ssm_segments).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

import mlx.core as mx


def cache_module() -> Any:
    return importlib.import_module("mlx_lm.models.cache")


def batch_cache_class() -> type:
    """BatchMambaCache, derived from MambaCache where that exists (Mamba v1 writes its state
    back only into MambaCache instances), else from ArraysCache."""
    module = cache_module()
    base = getattr(module, "MambaCache", module.ArraysCache)
    arrays = module.ArraysCache

    class BatchMambaCache(base):  # type: ignore[misc,valid-type]
        """An SSM cache with the batch operations BatchGenerator needs."""

        cache: list[Any]

        def __init__(self, size: int = 2, left_padding: Any = None) -> None:
            arrays.__init__(self, size)
            self.left_padding = None if left_padding is None else mx.array(left_padding)
            self.lengths = None
            self.n_rows = 1 if left_padding is None else len(left_padding)

        @classmethod
        def from_cache(cls, cache: Any, left_padding: Any) -> Any:
            batch = cls(len(cache.cache), left_padding)
            batch.cache = list(cache.cache)
            return batch

        def empty(self) -> bool:
            return self.cache[0] is None

        def extract(self, idx: int) -> Any:
            single = base() if base is not arrays else arrays(len(self.cache))
            if len(single.cache) != len(self.cache):
                single = arrays(len(self.cache))
            single.cache = [None if c is None else mx.contiguous(c[idx:idx + 1])
                            for c in self.cache]
            return single

        @classmethod
        def merge(cls, caches: list[Any]) -> Any:
            """Stack per-row caches; rows without state get zeros (a fresh row's state)."""
            merged = cls(len(caches[0].cache) if caches else 2)
            merged.n_rows = len(caches)
            for slot in range(len(merged.cache)):
                present = [c.cache[slot] for c in caches if c.cache[slot] is not None]
                if not present:
                    continue
                zeros = mx.zeros((1, *present[0].shape[1:]), present[0].dtype)
                rows = [zeros if c.cache[slot] is None else c.cache[slot] for c in caches]
                merged.cache[slot] = mx.concatenate(rows, axis=0)
            return merged

        def prepare(self, lengths: Any = None, right_padding: Any = None, **_: Any) -> None:
            """Nothing to do: the segmented prefill keeps right padding out of the state."""

        def finalize(self) -> None:
            self.left_padding = None
            self.lengths = None

        def filter(self, batch_indices: Any) -> None:
            self.cache = [None if c is None else c[batch_indices] for c in self.cache]
            self.n_rows = len(batch_indices)
            self.left_padding = None

        def extend(self, other: Any) -> None:
            """Rows of `other` after ours; a side without state yet gets zeros for its rows
            (a fresh row's state), so every slot keeps one entry per row of the batch."""
            mine, theirs = rows_of(self), rows_of(other)
            self.cache = [_joined(c, o, mine, theirs)
                          for c, o in zip(self.cache, other.cache, strict=True)]
            self.n_rows = mine + theirs
            self.left_padding = None

    return BatchMambaCache


def rows_of(cache: Any) -> int:
    """Rows of an SSM cache: its state's batch size, else its padding's, else its count."""
    for c in cache.cache:
        if c is not None:
            return int(c.shape[0])
    padding = getattr(cache, "left_padding", None)
    if padding is not None:
        return int(padding.size)
    return int(getattr(cache, "n_rows", 1))


def _joined(mine: Any, theirs: Any, n_mine: int, n_theirs: int) -> Any:
    if mine is None and theirs is None:
        return None
    like = mine if mine is not None else theirs
    top = mine if mine is not None else mx.zeros((n_mine, *like.shape[1:]), like.dtype)
    bottom = theirs if theirs is not None else mx.zeros((n_theirs, *like.shape[1:]), like.dtype)
    return mx.concatenate([top, bottom])


def _to_batch(cache: Any, left_padding: Any, batch_cls: Any) -> Any:
    arrays = cache_module().ArraysCache
    if isinstance(cache, arrays) and not isinstance(cache, batch_cls):
        return batch_cls.from_cache(cache, left_padding)
    inner = getattr(cache, "caches", None)
    if inner is not None:
        return type(cache)(*(_to_batch(c, left_padding, batch_cls) for c in inner))
    return cache


def wrap_make_cache(original: Callable[..., list[Any]], batch_cls: type) -> Callable[..., Any]:
    def _make_cache(model: Any, left_padding: Any, *args: Any, **kwargs: Any) -> list[Any]:
        caches = original(model, left_padding, *args, **kwargs)
        return [_to_batch(c, left_padding, batch_cls) for c in caches]

    _make_cache.__wrapped__ = original  # type: ignore[attr-defined]
    return _make_cache


def _kv_with_rows(column: list[Any]) -> list[Any]:
    """Give empty KV caches of new rows a zero-length buffer shaped like the others', so the
    generator's KV merge (which indexes every row's keys) takes them as all padding."""
    full = next((c for c in column if getattr(c, "keys", None) is not None), None)
    if full is None:
        return column
    for c in column:
        if getattr(c, "keys", False) is None:
            c.keys, c.values, c.offset = full.keys[:, :, :0], full.values[:, :, :0], 0
    return column


def wrap_merge_caches(original: Callable[..., list[Any]], batch_cls: Any) -> Callable[..., Any]:
    arrays = cache_module().ArraysCache

    def _merge_caches(caches: list[list[Any]]) -> list[Any]:
        if not caches:
            return []
        merged = []
        for layer in range(len(caches[0])):
            column = [c[layer] for c in caches]
            if isinstance(column[0], arrays):
                merged.append(batch_cls.merge(column))
            else:
                merged.append(original([[c] for c in _kv_with_rows(column)])[0])
        return merged

    _merge_caches.__wrapped__ = original  # type: ignore[attr-defined]
    return _merge_caches


def wrap_cache_length(original: Callable[[list[Any]], int]) -> Callable[[list[Any]], int]:
    arrays = cache_module().ArraysCache

    def cache_length(cache: list[Any]) -> int:
        state = any(isinstance(c, arrays) and c.cache[0] is not None for c in cache)
        return max(original(cache), int(state))

    cache_length.__wrapped__ = original  # type: ignore[attr-defined]
    return cache_length


def fixed_merge(original: Any) -> Any:
    """ArraysCache.merge whose result never carries a 0-d `left_padding` (MambaCache(n))."""
    func = original.__func__

    def merge(cls: type, caches: list[Any]) -> Any:
        merged = func(cls, caches)
        padding = getattr(merged, "left_padding", None)
        if isinstance(padding, mx.array) and padding.ndim == 0:
            merged.left_padding = None
        return merged

    merge.__wrapped__ = func  # type: ignore[attr-defined]
    return classmethod(merge)


def fixed_extract(original: Callable[..., Any]) -> Callable[..., Any]:
    """ArraysCache.extract that returns the cache's own class (a MambaCache stays one)."""
    arrays = cache_module().ArraysCache

    def extract(self: Any, idx: int) -> Any:
        single = original(self, idx)
        if type(single) is type(self) or not isinstance(self, arrays):
            return single
        cls: Any = type(self)
        own = cls.__new__(cls)
        arrays.__init__(own, len(single.cache))
        own.cache = [None if c is None else mx.contiguous(c) for c in single.cache]
        return own

    extract.__wrapped__ = original  # type: ignore[attr-defined]
    return extract
