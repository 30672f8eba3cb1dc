"""The mlx-lm modules the drivers use, found by import path (never `mlx_lm.generate` the
attribute: the package re-exports a function under that name)."""

from __future__ import annotations

import importlib
import types
from typing import Any


def generate_module() -> types.ModuleType:
    """`mlx_lm.generate` the module."""
    return importlib.import_module("mlx_lm.generate")


def cache_module() -> types.ModuleType:
    return importlib.import_module("mlx_lm.models.cache")


def host_int(value: Any) -> int:
    """One token id read back from the device (an mx.array scalar, or an int already)."""
    return int(value.item() if hasattr(value, "item") else value)


def host_ints(value: Any) -> list[int]:
    """Token ids read back from the device, one per row."""
    return [int(t) for t in value.tolist()]
