"""Tiny random language models of mlx-vlm's qwen3_5 and gemma4, built from a config (no hub).

These are what vllm-mlx's `qwen3_5_mllm` / `gemma4_mllm` patches change: the text model a
served VLM decodes with, batched through mlx-vlm's caches (drivers/vlm_text.py). Both exist
from mlx-vlm 0.4.x on; elsewhere the factory raises SkipCheck with the reason. Config fields
a release does not know are dropped (fields drift); every parameter is re-drawn, because
gemma4 ties its output to the input embedding and a tiny tied model echoes its last token
(greedy comparison would be blind).
"""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from mlxcompat.errors import SkipCheck
from mlxcompat.models.evaluate import evaluate_all

PARAM_STD = 0.2
_BASE: dict[str, Any] = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
                         "vocab_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
                         "head_dim": 16, "rms_norm_eps": 1e-5, "max_position_embeddings": 512,
                         "tie_word_embeddings": False}

QWEN3_5_TEXT: dict[str, Any] = {
    **_BASE, "model_type": "qwen3_5_text", "linear_num_value_heads": 4,
    "linear_num_key_heads": 2, "linear_key_head_dim": 16, "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4, "full_attention_interval": 2,
    # mrope_section sums to head_dim * partial_rotary_factor / 2
    "rope_parameters": {"type": "default", "mrope_section": [2, 1, 1], "rope_theta": 1e4,
                        "partial_rotary_factor": 0.5},
}

GEMMA4_TEXT: dict[str, Any] = {
    **_BASE, "model_type": "gemma4_text", "global_head_dim": 16,
    "num_global_key_value_heads": 2, "num_kv_shared_layers": 0,
    "vocab_size_per_layer_input": 128, "hidden_size_per_layer_input": 16,
    # A window shorter than the longest row, so the sliding layer's rotating cache wraps.
    "sliding_window": 8, "layer_types": ["sliding_attention", "full_attention"],
    "use_double_wide_mlp": False, "final_logit_softcapping": 30.0,
}


def _config(cls: type, values: dict[str, Any]) -> Any:
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in known})


def _modules(family: str) -> tuple[Any, Any]:
    names = (f"mlx_vlm.models.{family}.config", f"mlx_vlm.models.{family}.language")
    try:
        return tuple(importlib.import_module(n) for n in names)  # type: ignore[return-value]
    except ModuleNotFoundError as exc:
        if exc.name not in ("mlx_vlm", f"mlx_vlm.models.{family}", *names):
            raise
        raise SkipCheck(f"mlx_vlm {family} is not in this environment ({exc.name} "
                        "missing)") from exc


def _redraw(model: Any, seed: int) -> Any:
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    mx.random.seed(seed + 1)
    redrawn = []
    for name, value in tree_flatten(model.parameters()):
        centre = 1.0 if "norm" in name and name.endswith("weight") else 0.0
        noise = PARAM_STD * mx.random.normal(value.shape)
        redrawn.append((name, (centre + noise).astype(mx.float32)))
    model.update(tree_unflatten(redrawn))
    model.eval()
    return evaluate_all(model)


def qwen3_5_vlm(seed: int = 0) -> Any:
    """mlx-vlm's Qwen3.5 `LanguageModel` (gated-delta and attention layers), float32."""
    import mlx.core as mx

    config, language = _modules("qwen3_5")
    mx.random.seed(seed)
    text = _config(config.TextConfig, QWEN3_5_TEXT)
    vision = config.VisionConfig()
    model_config = _config(config.ModelConfig, {"text_config": text, "vision_config": vision,
                                                "model_type": "qwen3_5"})
    return _redraw(language.LanguageModel(text, model_config), seed)


def gemma4_vlm(seed: int = 0) -> Any:
    """mlx-vlm's Gemma 4 `LanguageModel` (a sliding and a full attention layer), float32."""
    import mlx.core as mx

    config, language = _modules("gemma4")
    mx.random.seed(seed)
    return _redraw(language.LanguageModel(_config(config.TextConfig, GEMMA4_TEXT)), seed)
