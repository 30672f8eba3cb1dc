"""Tag a compat test with the check it records (the plugin parametrizes it from the spec)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def check(name: str, runs_when_broken: bool = False) -> Callable[[Any], Any]:
    """`runs_when_broken`: the test reports on the subject itself (install, import, patch
    status), so it still runs when the subject failed to install or apply."""

    def mark(fn: Any) -> Any:
        fn.check = name
        fn.runs_when_broken = runs_when_broken
        return fn

    return mark
