"""Tiny random GLM-4.6V (glm4v_moe) text model from mlx-vlm, built from a config (no hub)."""

from __future__ import annotations

import dataclasses
import importlib
from typing import Any

from mlxcompat.errors import SkipCheck
from mlxcompat.models.evaluate import evaluate_all

TEXT_CONFIG: dict[str, Any] = {
    "model_type": "glm4v_moe_text",
    "vocab_size": 128,
    "hidden_size": 64,
    "intermediate_size": 128,
    "max_position_embeddings": 4096,
    "moe_intermediate_size": 32,
    "norm_topk_prob": True,
    "num_attention_heads": 4,
    "n_group": 1,
    "head_dim": 16,
    "topk_group": 1,
    "n_shared_experts": 1,
    "n_routed_experts": 4,
    "routed_scaling_factor": 1.0,
    "num_experts_per_tok": 2,
    "first_k_dense_replace": 1,
    "num_hidden_layers": 2,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "use_qk_norm": False,
    "attention_bias": True,
    "partial_rotary_factor": 0.5,
    "rope_theta": 10000.0,
    # The three sections must sum to head_dim * partial_rotary_factor / 2.
    "rope_scaling": {"type": "default", "mrope_section": [2, 1, 1]},
    "tie_word_embeddings": False,
}

VISION_CONFIG: dict[str, Any] = {
    "model_type": "glm4v_moe",
    "depth": 1,
    "hidden_size": 32,
    "intermediate_size": 64,
    "num_heads": 2,
    "patch_size": 14,
}

# Media token ids inside the tiny vocabulary (the real ones, 151339…, are beyond it): only
# `get_rope_index` reads them, when a call carries an image grid (drivers/glm4v.py).
MEDIA_TOKENS: dict[str, int] = {"image_token_id": 120, "vision_start_token_id": 121,
                                "video_token_id": 122}

PARAM_STD = 0.2


def _config(cls: type, values: dict[str, Any]) -> Any:
    """Instantiate a config dataclass with the fields this release knows (fields drift)."""
    known = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in known})


def build_glm4v_language_model(seed: int = 0) -> Any:
    """Build the tiny glm4v_moe `LanguageModel` (float32) with every parameter re-drawn.

    Upstream initialises the MoE gate at zeros, which would route every token alike and hide
    routing bugs; re-drawing every parameter (N(0, PARAM_STD), norm scales around one) makes
    routing depend on the input. Every array it holds is evaluated, the rotary embedding's
    private `_inv_freq` included, so it serves from any thread (models/evaluate.py).
    """
    import mlx.core as mx
    from mlx.utils import tree_flatten, tree_unflatten

    try:
        config_mod = importlib.import_module("mlx_vlm.models.glm4v_moe.config")
        language = importlib.import_module("mlx_vlm.models.glm4v_moe.language")
    except ModuleNotFoundError as exc:
        if exc.name not in ("mlx_vlm", "mlx_vlm.models.glm4v_moe",
                            "mlx_vlm.models.glm4v_moe.config",
                            "mlx_vlm.models.glm4v_moe.language"):
            raise
        raise SkipCheck(f"mlx_vlm glm4v_moe is not available here ({exc.name} missing)") from exc

    mx.random.seed(seed)
    text = _config(config_mod.TextConfig, TEXT_CONFIG)
    vision = _config(config_mod.VisionConfig, VISION_CONFIG)
    model_config = _config(
        config_mod.ModelConfig,
        {"text_config": text, "vision_config": vision, "model_type": "glm4v_moe",
         **MEDIA_TOKENS},
    )
    model = language.LanguageModel(text, model_config)
    params = tree_flatten(model.parameters())
    redrawn = []
    for name, value in params:
        noise = PARAM_STD * mx.random.normal(value.shape)
        # Norm scales stay centred on one so activations keep their size through the stack.
        centre = 1.0 if name.endswith("norm.weight") else 0.0
        redrawn.append((name, (centre + noise).astype(mx.float32)))
    model.update(tree_unflatten(redrawn))
    model.eval()
    return evaluate_all(model)
