"""mlx-vlm's Qwen3.5 language model decodes left-padded rows at the wrong position:
mlx-vlm 0.7.10 (mlx-lm 0.32.2, mlx 0.32.4, CPU).

    pip install "mlx-vlm==0.7.10" "mlx-lm==0.32.2" "mlx==0.32.4"   # Linux: "mlx[cpu]==0.32.4"
    python mlx_vlm_qwen3_5_left_padding.py

Two prompts of different lengths, left-padded into one batch (BatchKVCache with the padding
for the attention layer, ArraysCache with `left_padding` for the gated-delta layer), then
greedy decoding, against each prompt alone with `make_cache()`. The prefill agrees; the
padded row's decode does not (the unpadded row is exact, and so are rows prefilled alone and
merged). After the prefill the padded row's keys differ from the same prompt's alone: with
a batch cache `LanguageModel.__call__` sets `cache_offsets` and so skips the branch that
builds the padding mask for positions, so the prompt is rotated at padded positions while
decoding continues at each row's real length (our reading of qwen3_5/language.py; the
script prints the keys' difference). Observed on Linux x86_64 CPU: prefill |Δ logit| ≤ 5e-7,
first decode step 0.0877, other greedy tokens at step 2; keys of the padded row |Δ| 2.9
(the harness's `vlm` check, scenario padded: |Δ logprob| 0.50). Expected: 0 up to float32
noise (1e-4). LM Studio's mlx-engine works around this decode path in its own patch
(mlx_engine/model_kit/patches/qwen3_5.py at 08f0c07, which hands left-padded text-only
decode steps each row's offset as its position).
"""

import mlx.core as mx
import numpy as np
from mlx_vlm.models.cache import ArraysCache, BatchKVCache
from mlx_vlm.models.qwen3_5 import config, language

TEXT = {"model_type": "qwen3_5_text", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "vocab_size": 128, "num_attention_heads": 4,
        "num_key_value_heads": 2, "head_dim": 16, "rms_norm_eps": 1e-5,
        "max_position_embeddings": 512, "tie_word_embeddings": False,
        "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 16,
        "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
        "full_attention_interval": 2,  # layer 0 gated delta, layer 1 attention
        "rope_parameters": {"type": "default", "mrope_section": [2, 1, 1], "rope_theta": 1e4,
                            "partial_rotary_factor": 0.5}}
PROMPTS = [[5, 17, 42], [11, 99, 4, 58, 30, 120, 7, 66]]
STEPS = 3


def build():
    mx.random.seed(0)
    text = config.TextConfig(**TEXT)
    model = language.LanguageModel(text, config.ModelConfig(
        text_config=text, vision_config=config.VisionConfig(), model_type="qwen3_5"))
    mx.eval(model.parameters())
    return model


def forget_positions(model):
    model._position_ids = model._rope_deltas = None  # it keeps them between calls


def alone(model, prompt):
    forget_positions(model)
    cache = model.make_cache()
    logits = [model(mx.array([prompt]), cache=cache).logits[0, -1]]
    for _ in range(STEPS - 1):
        token = mx.argmax(logits[-1]).reshape(1, 1)
        logits.append(model(token, cache=cache).logits[0, -1])
    return logits


def batched(model, prompts):
    width = max(map(len, prompts))
    padding = [width - len(p) for p in prompts]
    rows = [[0] * pad + p for pad, p in zip(padding, prompts, strict=True)]
    cache = [ArraysCache(len(c.cache), left_padding=padding) if isinstance(c, ArraysCache)
             else BatchKVCache(padding) for c in model.make_cache()]
    forget_positions(model)
    logits = [model(mx.array(rows), cache=cache).logits[:, -1]]
    for _ in range(STEPS - 1):
        tokens = mx.argmax(logits[-1], axis=-1)[:, None]
        logits.append(model(tokens, cache=cache).logits[:, -1])
    return logits


def keys_after_prefill(model):
    """max |Δ| of the attention layer's keys of the padded row against the prompt alone."""
    width = max(map(len, PROMPTS))
    padding = [width - len(p) for p in PROMPTS]
    batch = [ArraysCache(len(c.cache), left_padding=padding) if isinstance(c, ArraysCache)
             else BatchKVCache(padding) for c in model.make_cache()]
    forget_positions(model)
    model(mx.array([[0] * pad + p for pad, p in zip(padding, PROMPTS, strict=True)]),
          cache=batch)
    forget_positions(model)
    single = model.make_cache()
    model(mx.array([PROMPTS[0]]), cache=single)
    fa = next(i for i, c in enumerate(single) if not isinstance(c, ArraysCache))
    got = np.array(batch[fa].keys[0, :, padding[0]:width])
    return float(np.abs(got - np.array(single[fa].keys[0, :, :len(PROMPTS[0])])).max())


if __name__ == "__main__":
    model = build()
    print(f"padded row's keys after the prefill, max |Δ| {keys_after_prefill(model):.3g}")
    together = batched(model, PROMPTS)
    for row, prompt in enumerate(PROMPTS):
        single = alone(model, prompt)
        for step in range(STEPS):
            b, s = np.array(together[step][row]), np.array(single[step])
            print(f"row {row} ({len(prompt)} tokens) step {step}: |Δ logit| "
                  f"{np.abs(b - s).max():.3g}, greedy {int(b.argmax())} vs {int(s.argmax())}")
