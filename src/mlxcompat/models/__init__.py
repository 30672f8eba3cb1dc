"""One registry of tiny, seeded, randomly initialised models (float32, untied, no hub).

Building a model the installed release lacks raises `SkipCheck` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mlxcompat.models.lm import LM_CONFIGS, build_lm


@dataclass(frozen=True)
class ModelSpec:
    """A model name, the runner family that drives it, and its factory `build(seed)`."""

    name: str
    family: str  # "lm": mlx-lm BatchGenerator; "glm4v": mlx-vlm language model
    build: Callable[[int], Any]
    ssm: bool = False  # carries recurrent (ArraysCache / MambaCache) state


def _lm(name: str, ssm: bool) -> ModelSpec:
    return ModelSpec(name, "lm", lambda seed: build_lm(name, seed), ssm)


def _glm4v(seed: int) -> Any:
    from mlxcompat.models.glm4v import build_glm4v_language_model

    return build_glm4v_language_model(seed)


MODELS: dict[str, ModelSpec] = {
    "llama": _lm("llama", ssm=False),
    "mamba": _lm("mamba", ssm=True),
    "mamba2": _lm("mamba2", ssm=True),
    "qwen3_next": _lm("qwen3_next", ssm=True),
    "qwen3_5": _lm("qwen3_5", ssm=True),
    "glm4v_moe": ModelSpec("glm4v_moe", "glm4v", _glm4v),
}
LM_MODELS: tuple[str, ...] = tuple(n for n, s in MODELS.items() if s.family == "lm")
assert set(LM_MODELS) == set(LM_CONFIGS)


def build_model(name: str, seed: int = 0) -> Any:
    """Build the named tiny model; raises KeyError for an unknown name, SkipCheck if absent."""
    return MODELS[name].build(seed)
