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


def _lm(name: str) -> ModelSpec:
    return ModelSpec(name, "lm", lambda seed: build_lm(name, seed))


def _glm4v(seed: int) -> Any:
    from mlxcompat.models.glm4v import build_glm4v_language_model

    return build_glm4v_language_model(seed)


LM_MODELS: tuple[str, ...] = tuple(LM_CONFIGS)
MODELS: dict[str, ModelSpec] = {
    **{name: _lm(name) for name in LM_MODELS},
    "glm4v_moe": ModelSpec("glm4v_moe", "glm4v", _glm4v),
}


def build_model(name: str, seed: int = 0) -> Any:
    """Build the named tiny model; raises KeyError for an unknown name, SkipCheck if absent."""
    return MODELS[name].build(seed)
