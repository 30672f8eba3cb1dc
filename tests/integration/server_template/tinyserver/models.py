"""The server's own tiny model (a new model for mlxcompat): Qwen3, random, float32, no hub."""

import mlx.core as mx

SETTINGS = {"tokens_per_batch": 1}
CONFIG = {"model_type": "qwen3", "hidden_size": 64, "num_hidden_layers": 2,
          "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "head_dim": 16, "rms_norm_eps": 1e-5, "vocab_size": 128, "rope_theta": 10000.0,
          "max_position_embeddings": 512, "tie_word_embeddings": False}


def tiny_qwen3(seed: int = 0):
    from mlx_lm.models import qwen3

    mx.random.seed(seed)
    model = qwen3.Model(qwen3.ModelArgs.from_dict(CONFIG))
    mx.eval(model.parameters())
    return model
