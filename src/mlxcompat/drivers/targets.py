"""The objects batching patches replace, so a patch's effect can be observed by identity.

Upstream entry points return nothing useful; comparing these before and after a call tells
whether it patched anything, whatever it says.
"""

from __future__ import annotations

import importlib
from typing import Any

# (module, attribute path) of every known patch target, per patch role.
TARGETS: dict[str, tuple[tuple[str, str], ...]] = {
    "mamba": (
        ("mlx_lm.generate", "_make_cache"),
        ("mlx_lm.generate", "_merge_caches"),
        ("mlx_lm.models.cache", "cache_length"),
        ("mlx_lm.models.cache", "MambaCache"),
        ("mlx_lm.models.cache", "ArraysCache"),
    ),
    "glm4v": (
        ("mlx_vlm.models.glm4v_moe.language", "GLM4VModel.__call__"),
        ("mlx_vlm.models.glm4v_moe.language", "LanguageModel.__call__"),
        ("mlx_vlm.models.glm4v_moe.language", "create_attention_mask"),
    ),
}
TARGETS["mamba-legacy"] = TARGETS["mamba"]


def _resolve(module: str, path: str) -> Any:
    try:
        obj: Any = importlib.import_module(module)
    except ImportError:
        return None
    for part in path.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def snapshot(role: str) -> dict[str, Any]:
    """Current object behind every target of `role` (None where absent)."""
    return {f"{m}:{p}": _resolve(m, p) for m, p in TARGETS.get(role, ())}


def changed(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Targets whose object is no longer the same one."""
    return [k for k in before if before[k] is not after.get(k)]


def present(before: dict[str, Any]) -> bool:
    """Does the installed release have any target of this role at all?"""
    return any(v is not None for v in before.values())
