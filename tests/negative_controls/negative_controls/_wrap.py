"""Replace a class attribute once (idempotent), the way a careless patch would."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def replace_once(module: str, cls: str, name: str, make: Callable[[Any], Any]) -> bool:
    owner = getattr(importlib.import_module(module), cls)
    current = owner.__dict__[name]
    if getattr(current, "_negative_control", False):
        return True
    new = make(current)
    new._negative_control = True
    setattr(owner, name, new)
    return True
