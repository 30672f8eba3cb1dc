"""mlx-lm's BatchGenerator, Qwen3.5: short prompts prefilled in one batch with a long one get
other logprobs than alone. mlx-lm 0.31.1 (mlx 0.30.4) and 0.30.7; fixed in 0.31.2.

    pip install "mlx-lm==0.31.1" "mlx==0.30.4"   # Linux: "mlx[cpu]==0.30.4"
    python qwen3_5_long_row_padding.py [LONG]      # LONG: the long prompt's tokens, 768

A tiny random Qwen3.5 (one gated-delta layer, one attention layer). Four prompts are inserted
into one BatchGenerator (prefill step 64, as mlx_lm.server's check uses): a long one and three
of 26-33 tokens sharing a 24-token prefix. Each row is compared with the same prompt run
alone, then the three short ones are batched without the long one. Printed here (Linux x86_64
CPU), 0.31.1 and 0.30.7: "long + 3 short: worst |Δ logprob| 0.517" (LONG 768; 2.59 with
LONG 80, 0 with LONG 50 or less) and "3 short: worst |Δ logprob| 0"; 0.31.2, 0.32.0 and
0.32.2 print 0 for both (0.31.3 prints 0.0119 for both, its own regression of short
batches). Expected: 0 up to float32 noise. The harness's `server` check met it on a slow
machine only, where a group of requests arrived while the server was loading the model and
was prefilled with the 768-token request (qwen3_5 `shared-prefix`, |Δ| 0.044, for every
subject that does not fix qwen3_5); its parity prompts pad by a few tokens, which stays exact.
"""

import sys

import mlx.core as mx
import numpy as np
from mlx_lm.generate import BatchGenerator
from mlx_lm.models import qwen3_5

TEXT = {"model_type": "qwen3_5_text", "hidden_size": 64, "num_hidden_layers": 2,
        "vocab_size": 128, "tie_word_embeddings": False, "intermediate_size": 128,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
        "rms_norm_eps": 1e-5, "max_position_embeddings": 512,
        "full_attention_interval": 2,  # layer 0 gated delta, layer 1 attention
        "linear_num_value_heads": 4, "linear_num_key_heads": 2, "linear_key_head_dim": 16,
        "linear_value_head_dim": 16, "linear_conv_kernel_dim": 4,
        "num_experts": 0, "mlp_only_layers": [], "decoder_sparse_step": 1,
        "num_experts_per_tok": 0, "shared_expert_intermediate_size": 0,
        "moe_intermediate_size": 0,
        "rope_parameters": {"type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.25}}
STEPS = 6


def build():
    mx.random.seed(0)
    args = qwen3_5.ModelArgs.from_dict({"model_type": "qwen3_5", "tie_word_embeddings": False,
                                        "text_config": TEXT})
    model = qwen3_5.Model(args)
    mx.eval(model.parameters())
    return model


def generate(model, prompts):
    """Greedy, STEPS tokens a row: [(token, logprobs), ...] per prompt, in order."""
    gen = BatchGenerator(model, max_tokens=STEPS, prefill_step_size=64, prefill_batch_size=4,
                         completion_batch_size=8)
    uids = gen.insert(prompts, [STEPS] * len(prompts))
    out = {u: [] for u in uids}
    for _ in range(10_000):
        if all(len(out[u]) >= STEPS for u in uids):
            break
        responses = gen.next()
        if isinstance(responses, tuple):  # 0.31.2 on: (prompt progress, generated tokens)
            responses = responses[1]
        for r in responses:
            out[r.uid].append((r.token, r.logprobs))
    gen.close()
    return [out[u] for u in uids]


def worst(model, prompts):
    together = generate(model, prompts)
    deltas = []
    for prompt, rows in zip(prompts, together, strict=True):
        alone = generate(model, [prompt])[0]
        deltas.append(max(float(mx.max(mx.abs(a[1] - b[1])))
                          for a, b in zip(rows, alone, strict=True)))
    return max(deltas)


def main():
    length = int(sys.argv[1]) if len(sys.argv) > 1 else 768
    rng = np.random.default_rng(0)
    long = [i % 94 for i in range(length)]
    prefix = [int(t) for t in rng.integers(0, 94, 24)]
    short = [prefix + [int(t) for t in rng.integers(0, 94, n)] for n in (2, 5, 9)]
    model = build()
    print(f"long + 3 short: worst |Δ logprob| {worst(model, [long, *short]):.3g}")
    print(f"3 short: worst |Δ logprob| {worst(model, short):.3g}")


if __name__ == "__main__":
    main()
