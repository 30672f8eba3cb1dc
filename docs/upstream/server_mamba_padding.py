"""mlx_lm.server: concurrent requests to a Mamba (v1) model get other logprobs than the same
requests served one at a time. Bare reproduction (mlx-lm, mlx, transformers, tokenizers,
httpx; no hub, no mlxcompat): `python server_mamba_padding.py`.

A tiny random Mamba v1 is saved with a byte-level tokenizer and served twice on 127.0.0.1:
with batching (--decode-concurrency 8) and with --decode-concurrency 1 --prompt-concurrency 1
(requests sent one after another). Six prompts of different lengths are sent at once to the
first (while it prefills a long prompt, so they queue and share a prefill); each is then
sent alone to the second. Mamba v1 reads no padding mask, so the left padding of the
shorter prompts enters their recurrent state. Seen with mlx-lm 0.32.2 / mlx 0.32.2 on Linux
CPU: "max |Δ logprob| batched vs alone: 0.0331" (0.0333 in a second run; the harness's
`server` check measures 2.7e-2 on its own prompts). Expected: 0, as the tiny llama gives
in the harness's `server` rows.
"""

import json
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx
import mlx.core as mx
from mlx_lm.models import mamba
from mlx_lm.utils import save_model
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

CONFIG = {"model_type": "mamba", "vocab_size": 94, "hidden_size": 64, "num_hidden_layers": 2,
          "state_size": 16, "conv_kernel": 4, "use_bias": False, "use_conv_bias": True,
          "time_step_rank": 4, "intermediate_size": 128, "tie_word_embeddings": False}


def save(folder: Path) -> None:
    mx.random.seed(0)
    model = mamba.Model(mamba.ModelArgs.from_dict(CONFIG))
    mx.eval(model.parameters())
    save_model(folder, model)
    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())  # ids 0..93 are '!'..'~'
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(symbols)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(["<|im_end|>"])
    PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>").save_pretrained(
        str(folder))
    (folder / "config.json").write_text(json.dumps(CONFIG))


def serve(folder: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mlx_lm.server", "--model", str(folder),
                             "--port", str(port), *flags], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit("server did not start")


def ask(url: str, prompt: str) -> list[float]:
    body = {"prompt": prompt, "max_tokens": 6, "temperature": 0.0, "logprobs": True}
    out = httpx.post(f"{url}/v1/completions", json=body, timeout=60).json()
    return [c["logprob"] for c in out["choices"][0]["logprobs"]["content"]]


def main() -> None:
    prompts = ["abcdefghijklmnopqrstuvwx" + tail for tail in
               ("yz", "yzABC", "yzABCDEFG", "yzA", "yzABCDEFGHIJ", "yzABCDE")]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mamba"
        save(folder)
        batched, url = serve(folder, "--decode-concurrency", "8", "--prompt-concurrency", "4")
        alone, alone_url = serve(folder, "--decode-concurrency", "1", "--prompt-concurrency",
                                 "1")
        try:
            got: dict[int, list[float]] = {}
            blocker = threading.Thread(target=ask, args=(url, "x" * 256))
            blocker.start()
            time.sleep(0.02)
            threads = [threading.Thread(target=lambda i=i, p=p: got.__setitem__(i, ask(url, p)))
                       for i, p in enumerate(prompts)]
            for t in threads:
                t.start()
            for t in [blocker, *threads]:
                t.join()
            worst = 0.0
            for i, p in enumerate(prompts):
                ref = ask(alone_url, p)
                worst = max(worst, *(abs(a - b) for a, b in zip(got[i], ref, strict=True)))
            print(f"max |Δ logprob| batched vs alone: {worst:.3g} (expected 0)")
        finally:
            batched.terminate()
            alone.terminate()


if __name__ == "__main__":
    main()
