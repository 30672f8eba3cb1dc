"""Build the tiny models a matrix declares (`module:factory`), once per process.

A factory takes a seed and returns a float32 model with random weights; the built-in ones
live beside this file and are declared in builtin.yaml like any project's own. A factory
raises SkipCheck when its model does not exist in the installed release.
"""

from __future__ import annotations

import importlib
from typing import Any

from mlxcompat.registry import ModelDecl

_BUILT: dict[tuple[str, int], Any] = {}


def load_factory(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


def build_model(decl: ModelDecl, seed: int = 0) -> Any:
    """The model of `decl` for `seed`; built once per process (checks never mutate weights)."""
    key = (decl.factory, seed)
    if key not in _BUILT:
        _BUILT[key] = load_factory(decl.factory)(seed)
    return _BUILT[key]
