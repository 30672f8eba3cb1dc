"""Evaluate every array a model holds, so a model built on one thread serves from another.

mlx >= 0.32 keeps streams per thread: an array a factory leaves lazy holds a graph on the
building thread's stream, and evaluating it from another thread raises "There is no
Stream(cpu, N) in current thread". `mx.eval(model.parameters())` is not enough, because
`parameters()` leaves out private attributes: in mlx-vlm's GLM4V (0.7.10) that is
`LanguageModel.model.rotary_emb._inv_freq` (and `_original_inv_freq`), which
`GLM4VRotaryEmbedding.__init__` computes as `1 / base ** (arange / dim)` and every call reads.
So the whole object tree is walked: module entries (private ones included), lists, dicts and
the attributes of plain objects a module holds.
"""

from __future__ import annotations

import types
from typing import Any

_OPAQUE = (type, types.ModuleType, types.FunctionType, types.MethodType,
           types.BuiltinFunctionType, str, bytes, int, float, bool)


def held_arrays(root: Any) -> list[tuple[str, Any]]:
    """(path, array) for every distinct mx.array reachable from `root`."""
    import mlx.core as mx

    found: list[tuple[str, Any]] = []
    seen: set[int] = set()
    stack: list[tuple[str, Any]] = [("", root)]
    while stack:
        path, obj = stack.pop()
        if id(obj) in seen or obj is None or isinstance(obj, _OPAQUE):
            continue
        seen.add(id(obj))
        if isinstance(obj, mx.array):
            found.append((path, obj))
            continue
        children: list[tuple[str, Any]] = []
        if isinstance(obj, dict):
            children += [(str(k), v) for k, v in obj.items()]
        elif isinstance(obj, list | tuple):
            children += [(str(i), v) for i, v in enumerate(obj)]
        children += list(getattr(obj, "__dict__", {}).items())
        stack += [(f"{path}.{name}" if path else name, child) for name, child in children]
    return found


def evaluate_all(model: Any) -> Any:
    """Evaluate every array `model` holds (parameters and private buffers); returns it."""
    import mlx.core as mx

    mx.eval([array for _, array in held_arrays(model)])
    return model
