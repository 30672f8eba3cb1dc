"""Nemotron-H drifts in batched generation: mlx-lm 0.32.2 (mlx 0.32.2, CPU).

    pip install "mlx-lm==0.32.2" "mlx==0.32.2"   # Linux: "mlx[cpu]==0.32.2"
    python nemotron_h_padding.py

Prompts of different lengths through BatchGenerator differ from the same prompts alone.
`NemotronHMamba2Mixer._ssm` hands the SSM step the mask but not the cache's `lengths` (mamba2's
`_ssm` does, mlx_lm/models/mamba2.py), so the right padding BatchGenerator adds to shorter
prompts decays their recurrent state. Rapid-MLX 0.16.10 patches exactly this, gated to mlx-lm
0.31.3 (`rapid_mlx/patches/nemotron_h_ssm.py`, https://github.com/raullenchai/Rapid-MLX).
https://github.com/ml-explore/mlx-lm/issues/1908 reports the same missing argument in
granitemoehybrid (whose 0.32.1 code passes `lengths`); a comment there mentions nemotron_h,
which no issue of its own tracks.
mamba2 and granitemoehybrid are exact on 0.32.2. Observed on Linux x86_64 CPU with mlx 0.32.2:
largest |Δ logprob| 0.000575, greedy tokens equal (with mlx 0.32.4: 0.0512; the harness's
parity rows: 0.00173). Expected: 0 up to float32 noise (1e-4).
"""

import importlib

import mlx.core as mx
import numpy as np
from mlx_lm.models import nemotron_h

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


# Mamba2 mixer, attention, MLP, Mamba2 mixer; the fields 0.28-0.30 still require are given too.
CONFIG = {"model_type": "nemotron_h", "vocab_size": 128, "hidden_size": 64,
          "num_hidden_layers": 4, "hybrid_override_pattern": ["M", "*", "-", "M"],
          "intermediate_size": 128, "max_position_embeddings": 512, "num_attention_heads": 4,
          "num_key_value_heads": 2, "head_dim": 16, "attention_bias": False,
          "mamba_num_heads": 4, "mamba_head_dim": 16, "mamba_proj_bias": False,
          "ssm_state_size": 16, "conv_kernel": 4, "n_groups": 1, "mlp_bias": False,
          "layer_norm_epsilon": 1e-5, "rms_norm_eps": 1e-5, "residual_in_fp32": False,
          "use_bias": False, "use_conv_bias": True, "time_step_limit": [0.0, float("inf")],
          "tie_word_embeddings": False}
# Four prompts of different lengths (9, 3, 5, 7 tokens), as the harness batches them.
PROMPTS = [[11, 99, 4, 58, 30, 120, 7, 66, 13], [5, 17, 42], [9, 3, 77, 21, 64],
           [88, 2, 56, 19, 70, 12, 40]]

if __name__ == "__main__":
    mx.random.seed(0)
    model = nemotron_h.Model(nemotron_h.ModelArgs.from_dict(CONFIG))
    mx.eval(model.parameters())
    compare(model, PROMPTS)
