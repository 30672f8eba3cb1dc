"""Tiny mlx-lm models built from configs (no hub), one per family the patches touch."""

from __future__ import annotations

import importlib
from typing import Any

from mlxcompat.errors import SkipCheck
from mlxcompat.models.evaluate import evaluate_all

_COMMON: dict[str, Any] = {
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "vocab_size": 128,
    # Tied tiny models echo the last token, which would make greedy comparison blind.
    "tie_word_embeddings": False,
}

_LINEAR_ATTN: dict[str, Any] = {
    "linear_num_value_heads": 4,
    "linear_num_key_heads": 2,
    "linear_key_head_dim": 16,
    "linear_value_head_dim": 16,
    "linear_conv_kernel_dim": 4,
}

_HYBRID: dict[str, Any] = {
    **_COMMON,
    **_LINEAR_ATTN,
    "intermediate_size": 128,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "rms_norm_eps": 1e-5,
    "head_dim": 16,
    "full_attention_interval": 2,
    "num_experts": 0,
    "mlp_only_layers": [],
    "decoder_sparse_step": 1,
    "num_experts_per_tok": 0,
    "shared_expert_intermediate_size": 0,
    "moe_intermediate_size": 0,
    "max_position_embeddings": 512,
}

LM_CONFIGS: dict[str, dict[str, Any]] = {
    "llama": {
        **_COMMON,
        "model_type": "llama",
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-5,
    },
    "mamba": {
        **_COMMON,
        "model_type": "mamba",
        "state_size": 16,
        "conv_kernel": 4,
        "use_bias": False,
        "use_conv_bias": True,
        "time_step_rank": 4,
        "intermediate_size": 128,
    },
    "mamba2": {
        **_COMMON,
        "model_type": "mamba2",
        "num_heads": 4,
        "head_dim": 32,
        "n_groups": 1,
        "state_size": 16,
        "conv_kernel": 4,
        "layer_norm_epsilon": 1e-5,
        "time_step_limit": [0.0, float("inf")],
        "time_step_rank": 4,
        "use_bias": False,
        "use_conv_bias": True,
        "intermediate_size": 128,
    },
    "qwen3_next": {
        **_HYBRID,
        "model_type": "qwen3_next",
        "rope_theta": 1e4,
        "partial_rotary_factor": 0.25,
    },
    "qwen3_5": {
        "model_type": "qwen3_5",
        "tie_word_embeddings": False,
        "text_config": {
            **_HYBRID,
            "model_type": "qwen3_5_text",
            "rope_parameters": {
                "type": "default",
                "rope_theta": 1e4,
                "partial_rotary_factor": 0.25,
            },
        },
    },
    # The families upstream fixed batching in (0.32.1: minicpm3's padding mask,
    # granitemoehybrid's lengths) or a server patches (Rapid-MLX: nemotron_h's SSM step).
    # Each config builds in every mlx-lm release from 0.28.0 on: fields a release does not
    # know are ignored (ModelArgs.from_dict), so the union of what each requires is given.
    "nemotron_h": {
        **_COMMON,
        "model_type": "nemotron_h",
        "num_hidden_layers": 4,
        "hybrid_override_pattern": ["M", "*", "-", "M"],  # Mamba2, attention, MLP, Mamba2
        "intermediate_size": 128,
        "max_position_embeddings": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "attention_bias": False,
        "mamba_num_heads": 4,
        "mamba_head_dim": 16,
        "mamba_proj_bias": False,
        "ssm_state_size": 16,
        "conv_kernel": 4,
        "n_groups": 1,
        "mlp_bias": False,
        "layer_norm_epsilon": 1e-5,
        "rms_norm_eps": 1e-5,  # required up to 0.30.x
        "residual_in_fp32": False,  # required in 0.28.x
        "use_bias": False,
        "use_conv_bias": True,
        "time_step_limit": [0.0, float("inf")],
    },
    "granitemoehybrid": {
        **_COMMON,
        "model_type": "granitemoehybrid",
        "num_hidden_layers": 3,
        "layer_types": ["mamba", "attention", "mamba"],
        "intermediate_size": 128,
        "max_position_embeddings": 512,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "attention_bias": False,
        "embedding_multiplier": 1.0,
        "attention_multiplier": 0.25,
        "logits_scaling": 1.0,
        "residual_multiplier": 1.0,
        "rms_norm_eps": 1e-5,
        "num_local_experts": 4,  # required (MoE only) in 0.28.x
        "num_experts_per_tok": 2,
        "shared_intermediate_size": 128,
        "mamba_n_heads": 4,
        "mamba_d_head": 16,
        "mamba_proj_bias": False,
        "mamba_d_state": 16,
        "mamba_d_conv": 4,
        "mamba_n_groups": 1,
        "mamba_conv_bias": True,
        "position_embedding_type": "rope",
        "rope_theta": 10000.0,
    },
    "minicpm3": {
        **_COMMON,
        "model_type": "minicpm3",
        "dim_model_base": 64,
        "intermediate_size": 128,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-5,
        "q_lora_rank": 32,
        "qk_nope_head_dim": 8,
        "qk_rope_head_dim": 8,
        "kv_lora_rank": 16,
        "scale_depth": 1.4,
        "scale_emb": 1.0,
        "max_position_embeddings": 512,
        "rope_theta": 10000.0,
        # Read with .get() in every release; four factors for qk_rope_head_dim / 2.
        "rope_scaling": {"type": "longrope", "original_max_position_embeddings": 512,
                         "short_factor": [1.0] * 4, "long_factor": [1.0] * 4},
    },
}


def build_lm(name: str, seed: int = 0) -> Any:
    """Construct the tiny `name` model from its config with the given seed, float32.

    SkipCheck only when this release has no such model file; any other import error is the
    release's (or a patch's) problem and propagates. Every array the model holds is
    evaluated (not only its parameters), so it serves from any thread.
    """
    return evaluate_all(construct(name, LM_CONFIGS[name], seed))


def construct(name: str, config: dict[str, Any], seed: int) -> Any:
    """mlx-lm's own model class for `config`, weights drawn from `seed`, not yet evaluated
    (SkipCheck only when this release has no such model file)."""
    import mlx.core as mx

    module_name = f"mlx_lm.models.{config['model_type']}"
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise SkipCheck(f"model {name} is not in this mlx-lm release") from exc
    mx.random.seed(seed)
    return module.Model(module.ModelArgs.from_dict(config))


def llama(seed: int = 0) -> Any:
    return build_lm("llama", seed)


def mamba(seed: int = 0) -> Any:
    return build_lm("mamba", seed)


def mamba2(seed: int = 0) -> Any:
    return build_lm("mamba2", seed)


def qwen3_next(seed: int = 0) -> Any:
    return build_lm("qwen3_next", seed)


def qwen3_5(seed: int = 0) -> Any:
    return build_lm("qwen3_5", seed)


def nemotron_h(seed: int = 0) -> Any:
    return build_lm("nemotron_h", seed)


def granitemoehybrid(seed: int = 0) -> Any:
    return build_lm("granitemoehybrid", seed)


def minicpm3(seed: int = 0) -> Any:
    return build_lm("minicpm3", seed)
