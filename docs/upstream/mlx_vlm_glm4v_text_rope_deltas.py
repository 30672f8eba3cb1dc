"""GLM-4V (glm4v_moe) text rows: the rope deltas `get_rope_index` gives a left-padded batch
do not fit the per-row offsets its own decode adds them to. mlx-vlm 0.7.10 (mlx-lm 0.32.2,
mlx 0.32.4, CPU).

    pip install "mlx-vlm==0.7.10" "mlx-lm==0.32.2" "mlx[cpu]==0.32.4"   # macOS: "mlx==0.32.4"
    python mlx_vlm_glm4v_text_rope_deltas.py

Three text prompts of different lengths, left-padded into one batch of BatchKVCaches and
prefilled through `LanguageModel.__call__` with their attention mask, as a batching caller
does for image rows (the mask is what `get_rope_index` reads). With no image grid,
`get_rope_index` takes its text branch and returns, per row, max position + 1 - padded
length: minus the row's padding. Each decode step then places the row at the cache's per-row
offset (its real token count) plus that delta, so a padded row decodes `padding` positions
too early. With an image grid in the same call its image branch returns 0 for the text rows,
and they are exact (the harness's glm4v `image-mixed` rows). Observed on Linux x86_64 CPU:
rope deltas [-5, -3, 0] for paddings [5, 3, 0]; the 3- and 5-token rows differ from the same
prompt alone from the first decode step (max |Δ logit| 6.22 and 4.04 by the fourth), the
unpadded row is exact. Expected: deltas 0 for text rows, and 0 difference up to float32
noise (1e-4). The harness's `glm4v text-masked` rows show it on every mlx-vlm release with
per-row rope deltas (0.5.0 on), whatever the patch.
"""

import mlx.core as mx
import numpy as np
from mlx.utils import tree_flatten, tree_unflatten
from mlx_vlm.models.cache import BatchKVCache, KVCache
from mlx_vlm.models.glm4v_moe import config as cfg
from mlx_vlm.models.glm4v_moe import language

TEXT = dict(model_type="glm4v_moe_text", vocab_size=128, hidden_size=64, intermediate_size=128,
            max_position_embeddings=4096, moe_intermediate_size=32, norm_topk_prob=True,
            num_attention_heads=4, n_group=1, head_dim=16, topk_group=1, n_shared_experts=1,
            n_routed_experts=4, routed_scaling_factor=1.0, num_experts_per_tok=2,
            first_k_dense_replace=1, num_hidden_layers=2, num_key_value_heads=2,
            rms_norm_eps=1e-5, use_qk_norm=False, attention_bias=True,
            partial_rotary_factor=0.5, rope_theta=10000.0,
            rope_scaling={"type": "default", "mrope_section": [2, 1, 1]},
            tie_word_embeddings=False)
PROMPTS = [[5, 17, 42], [9, 3, 77, 21, 64], [11, 99, 4, 58, 30, 110, 7, 66]]
STEPS = 4


def known(cls, values):
    names = set(cls.__dataclass_fields__)
    return cls(**{k: v for k, v in values.items() if k in names})


def build():
    mx.random.seed(0)
    text = known(cfg.TextConfig, TEXT)
    vision = known(cfg.VisionConfig, {"model_type": "glm4v_moe", "depth": 1, "hidden_size": 32,
                                      "intermediate_size": 64, "num_heads": 2,
                                      "patch_size": 14})
    model_config = known(cfg.ModelConfig, {"text_config": text, "vision_config": vision,
                                           "model_type": "glm4v_moe", "image_token_id": 120,
                                           "vision_start_token_id": 121,
                                           "video_token_id": 122})
    lm = language.LanguageModel(text, model_config)
    lm.update(tree_unflatten([(n, ((1.0 if n.endswith("norm.weight") else 0.0)
                                   + 0.2 * mx.random.normal(v.shape)).astype(mx.float32))
                              for n, v in tree_flatten(lm.parameters())]))
    return lm


def forget(lm):
    lm._rope_deltas = None
    lm._position_ids = None


def alone(lm, prompt):
    forget(lm)
    cache = [KVCache() for _ in lm.model.layers]
    out = [lm(mx.array([prompt]), cache=cache).logits[0, -1]]
    for _ in range(STEPS - 1):
        out.append(lm(mx.array([[int(mx.argmax(out[-1]))]]), cache=cache).logits[0, -1])
    return [np.array(x) for x in out]


def batched(lm):
    forget(lm)
    width = max(map(len, PROMPTS))
    padding = [width - len(p) for p in PROMPTS]
    rows = mx.array([[0] * pad + p for pad, p in zip(padding, PROMPTS, strict=True)])
    mask = mx.array([[0] * pad + [1] * len(p) for pad, p in zip(padding, PROMPTS, strict=True)])
    cache = [BatchKVCache(padding) for _ in lm.model.layers]
    logits = lm(rows, mask=mask, cache=cache).logits[:, -1]
    deltas = lm._rope_deltas
    print("padding", padding, "rope deltas after prefill", np.array(deltas).ravel().tolist())
    out = [[np.array(logits[i])] for i in range(len(PROMPTS))]
    for _ in range(STEPS - 1):
        step = mx.array([[int(mx.argmax(logits[i]))] for i in range(len(PROMPTS))])
        logits = lm(step, cache=cache, rope_deltas=deltas).logits[:, -1]
        for i in range(len(PROMPTS)):
            out[i].append(np.array(logits[i]))
    return out


def main():
    lm = build()
    got = batched(lm)
    for i, prompt in enumerate(PROMPTS):
        want = alone(lm, prompt)
        worst = [float(np.max(np.abs(g - w))) for g, w in zip(got[i], want, strict=True)]
        print(f"row {i} ({len(prompt)} tokens): max |Δ logit| per step vs alone",
              " ".join(f"{d:.3g}" for d in worst))


if __name__ == "__main__":
    main()
