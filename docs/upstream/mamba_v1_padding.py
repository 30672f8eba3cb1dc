"""Mamba v1 ignores padding in batched generation: mlx-lm 0.32.2 (mlx 0.32.2, CPU or Metal).

    pip install "mlx-lm==0.32.2" "mlx==0.32.2"   # Linux: "mlx[cpu]==0.32.2"
    python mamba_v1_padding.py

Two prompts of different lengths through BatchGenerator differ from the same prompts run
alone through generate_step: `MambaMixer` reads no mask, so the padding of the shorter
prompt runs through its conv window and recurrent state (mamba2, nemotron_h and qwen3_next
mask it). No upstream issue or PR tracks this (searched 2026-12-01). Observed on Linux x86_64
CPU with mlx 0.32.2: largest |Δ logprob| 0.0622, and the 3-token row decodes other greedy
tokens from its first step (with mlx 0.32.4: 0.473). Expected: 0 up to float32 noise (1e-4).
The harness measures the same on every mlx-lm release from 0.28.0 (its parity rows of model
mamba, subject none).
"""

import importlib

import mlx.core as mx
import numpy as np
from mlx_lm.models import mamba

gen = importlib.import_module("mlx_lm.generate")  # `import mlx_lm.generate` is the function


def alone(model, prompt, n):
    tokens, scores = [], []
    for token, logprobs in gen.generate_step(prompt=mx.array(prompt), model=model,
                                             max_tokens=n):
        tokens.append(int(token))
        scores.append(np.array(logprobs.astype(mx.float32)))
    return tokens, scores


def batched(model, prompts, n):
    bg = gen.BatchGenerator(model=model, max_tokens=n, completion_batch_size=len(prompts),
                            prefill_batch_size=len(prompts))
    uids = bg.insert(prompts, max_tokens=[n] * len(prompts))
    out = {u: ([], []) for u in uids}
    while any(len(t) < n for t, _ in out.values()):
        result = bg.next()
        for r in (result[1] if isinstance(result, tuple) else result):
            out[r.uid][0].append(int(r.token))
            out[r.uid][1].append(np.array(r.logprobs.astype(mx.float32)))
    bg.close()
    return [out[u] for u in uids]


def compare(model, prompts, n=6):
    """Print each row's tokens batched and alone, and the largest |Δ logprob|."""
    worst = 0.0
    rows = batched(model, prompts, n)
    for i, (prompt, (b_tok, b_lp)) in enumerate(zip(prompts, rows, strict=True)):
        s_tok, s_lp = alone(model, prompt, n)
        same = next((j for j, (a, b) in enumerate(zip(b_tok, s_tok, strict=True)) if a != b), n)
        delta = max(float(np.abs(b_lp[j] - s_lp[j]).max()) for j in range(max(same, 1)))
        worst = max(worst, delta)
        print(f"row {i} ({len(prompt)} tokens): batched {b_tok} alone {s_tok} "
              f"max |Δ logprob| {delta:.3g}")
    print(f"largest |Δ logprob| {worst:.3g} (float32; 0 expected, 1e-4 tolerated)")
    return worst


CONFIG = {"model_type": "mamba", "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2,
          "state_size": 16, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True,
          "time_step_rank": 4, "intermediate_size": 128, "tie_word_embeddings": False}
# Four prompts of different lengths (9, 3, 5, 7 tokens), as the harness batches them.
PROMPTS = [[11, 99, 4, 58, 30, 120, 7, 66, 13], [5, 17, 42], [9, 3, 77, 21, 64],
           [88, 2, 56, 19, 70, 12, 40]]

if __name__ == "__main__":
    mx.random.seed(0)
    model = mamba.Model(mamba.ModelArgs.from_dict(CONFIG))
    mx.eval(model.parameters())
    compare(model, PROMPTS)
