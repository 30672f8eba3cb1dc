"""Capability probe of the installed mlx-lm: what the batching patches touch, asked not assumed."""

from __future__ import annotations

import importlib
import inspect
import types
from dataclasses import asdict, dataclass, field
from typing import Any

# The batch methods a cache needs for continuous batching (extract/merge arrive together).
ARRAYS_CACHE_BATCH_METHODS = (
    "filter", "extend", "extract", "merge", "prepare", "finalize", "advance", "make_mask", "empty",
)


def generate_module() -> types.ModuleType:
    """`mlx_lm.generate` the module (the package re-exports a function under that name)."""
    return importlib.import_module("mlx_lm.generate")


def cache_module() -> types.ModuleType:
    return importlib.import_module("mlx_lm.models.cache")


def _code_objects(obj: Any) -> list[types.CodeType]:
    """All code objects (nested included) of a function, or of every method of a class."""
    if inspect.isclass(obj):
        funcs = [v for v in vars(obj).values() if inspect.isfunction(v)]
        wrapped = (v for v in vars(obj).values() if isinstance(v, classmethod | staticmethod))
        funcs += [v.__func__ for v in wrapped]
        for v in vars(obj).values():
            if inspect.isclass(v):
                funcs.extend(v for v in vars(v).values() if inspect.isfunction(v))
    else:
        funcs = [obj]
    found: list[types.CodeType] = []
    stack = [f.__code__ for f in funcs if hasattr(f, "__code__")]
    while stack:
        code = stack.pop()
        found.append(code)
        stack.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return found


def name_is_called(module: types.ModuleType, name: str) -> bool:
    """Is `name` referenced by any function or class of `module` other than its own definition?

    Presence is not use: a release can keep a helper it never calls.
    """
    for attr, obj in vars(module).items():
        if attr == name or getattr(obj, "__module__", None) != module.__name__:
            continue
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue
        if any(name in code.co_names for code in _code_objects(obj)):
            return True
    return False


def _positional_arity(func: Any) -> int:
    params = inspect.signature(func).parameters.values()
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return sum(1 for p in params if p.kind in kinds)


def _history_counted(cache_mod: types.ModuleType) -> bool | None:
    """Does the generator's history test see an SSM cache that holds state?

    Releases that decide "no history" with `cache_length` (max of `len(c)`) take an
    ArraysCache with state for an empty one and silently drop its history.
    """
    import mlx.core as mx

    fn = getattr(cache_mod, "cache_length", None)
    if fn is None:
        return None
    probe = cache_mod.ArraysCache(2)
    probe[0] = mx.zeros((1, 1))
    probe[1] = mx.zeros((1, 1))
    return bool(fn([probe]))


@dataclass
class LmCapabilities:
    """What the installed mlx-lm offers the batching path; see `probe_lm`."""

    batch_generator: bool = False
    make_cache: bool = False
    make_cache_arity: int | None = None
    make_cache_called: bool = False
    merge_caches: bool = False
    merge_caches_called: bool = False
    extract_called: bool = False
    mamba_cache: bool = False
    arrays_cache_methods: list[str] = field(default_factory=list)
    batch_kv_cache_in_generate: bool = False
    cache_length_used: bool = False
    ssm_history_counted: bool | None = None
    generator_keywords: list[str] = field(default_factory=list)
    next_returns_tuple: bool = False
    stats_context_manager: bool = False
    peak_memory: bool = False

    @property
    def native_ssm_batching(self) -> bool:
        """ArraysCache can be extracted and merged by itself: no cache patch is needed."""
        return {"extract", "merge"} <= set(self.arrays_cache_methods)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "native_ssm_batching": self.native_ssm_batching}


def probe_lm() -> LmCapabilities:
    """Probe the installed mlx-lm without running a model."""
    import mlx.core as mx

    gen, cache_mod = generate_module(), cache_module()
    caps = LmCapabilities()
    bg = getattr(gen, "BatchGenerator", None)
    caps.batch_generator = bg is not None
    caps.make_cache = hasattr(gen, "_make_cache")
    if caps.make_cache:
        caps.make_cache_arity = _positional_arity(gen._make_cache)
        caps.make_cache_called = name_is_called(gen, "_make_cache")
    caps.merge_caches = hasattr(gen, "_merge_caches")
    caps.merge_caches_called = caps.merge_caches and name_is_called(gen, "_merge_caches")
    caps.extract_called = name_is_called(gen, "extract")
    caps.mamba_cache = hasattr(cache_mod, "MambaCache")
    caps.arrays_cache_methods = [
        m for m in ARRAYS_CACHE_BATCH_METHODS if hasattr(cache_mod.ArraysCache, m)
    ]
    caps.batch_kv_cache_in_generate = hasattr(gen, "BatchKVCache")
    caps.cache_length_used = name_is_called(gen, "cache_length")
    caps.ssm_history_counted = _history_counted(cache_mod)
    if bg is not None:
        caps.generator_keywords = [p for p in inspect.signature(bg).parameters if p != "model"]
        caps.next_returns_tuple = _next_returns_tuple(bg)
        caps.stats_context_manager = hasattr(bg.stats, "__wrapped__")
    caps.peak_memory = hasattr(mx, "get_peak_memory")
    return caps


def _next_returns_tuple(bg: type) -> bool:
    """The same ast rule the static probe applies to wheels, on the imported class."""
    import ast
    import textwrap

    from mlxcompat.drivers.static_probe import returns_tuple

    tree = ast.parse(textwrap.dedent(inspect.getsource(bg)))
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef))
    return returns_tuple(cls)
