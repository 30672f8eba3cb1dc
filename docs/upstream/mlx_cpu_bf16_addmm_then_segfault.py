"""mlx 0.29.2 (CPU, Linux): a bfloat16 Mamba v1 forward raises "[AddMM::eval_cpu] Currently
only supports float32", and the process then dies (SIGSEGV or SIGABRT) on a later, valid
float32 evaluation. Bare reproduction (mlx[cpu]==0.29.2, mlx-lm 0.29.1; no hub):
`python mlx_cpu_bf16_addmm_then_segfault.py`.

Seen with mlx 0.29.2: the RuntimeError is raised and caught, then "exit code -11" (or -6)
within a few further evaluations. Expected: the error, then the float32 runs go on. mlx 0.32.2
runs the bfloat16 model (no AddMM error) and the process ends normally.
"""

import mlx.core as mx
from mlx_lm.models import mamba

CONFIG = {"model_type": "mamba", "vocab_size": 128, "hidden_size": 64, "num_hidden_layers": 2,
          "state_size": 16, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True,
          "time_step_rank": 4, "intermediate_size": 128, "tie_word_embeddings": False}


def main() -> None:
    mx.random.seed(0)
    model = mamba.Model(mamba.ModelArgs.from_dict(CONFIG))
    model.set_dtype(mx.bfloat16)
    try:
        mx.eval(model(mx.array([[1, 2, 3, 4, 5]])))
        print("bfloat16 forward ran")
    except RuntimeError as exc:
        print(f"bfloat16 forward raised: {exc}")
    for _ in range(50):
        x = mx.random.normal((64, 64))
        mx.eval(x @ x + 1.0)
        mx.eval(mx.addmm(mx.ones((64,)), x, x))
    print("50 float32 evaluations after it ran: no crash")


if __name__ == "__main__":
    main()
