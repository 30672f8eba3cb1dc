"""Bytecode for the harness's own processes where the environment turned it off.

With PYTHONDONTWRITEBYTECODE set (CI images and this project's machines set it) and venvs
installed by uv (which compiles nothing by default), every process of a run compiles each
module it imports from source: mlx-lm, numpy, pydantic, transformers, pytest, the harness.
A matrix cell starts a dozen or more processes (subjects, servers, the need probe), and this
was a third of a cell's fixed cost (14-18 s against 10-12 s for mlx-lm 0.31.3 with only its
cheap checks, three runs each). Such a run keeps its bytecode in one folder of its own
(PYTHONPYCACHEPREFIX) instead, so no source tree is written to, which is what the setting
was usually meant to prevent. MLXCOMPAT_BYTECODE=0 leaves the environment as it is.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping
from pathlib import Path


def keep_bytecode(cache: Path, env: MutableMapping[str, str] | None = None) -> str:
    """Where bytecode goes from now on in `env` (os.environ by default): '' when nothing
    changed (bytecode is written as usual, or the user opted out, or chose a prefix)."""
    env = os.environ if env is None else env
    if not env.get("PYTHONDONTWRITEBYTECODE") or env.get("MLXCOMPAT_BYTECODE") == "0":
        return ""
    del env["PYTHONDONTWRITEBYTECODE"]
    env.setdefault("PYTHONPYCACHEPREFIX", str(cache.resolve()))
    return env["PYTHONPYCACHEPREFIX"]
