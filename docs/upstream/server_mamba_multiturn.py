"""mlx_lm.server up to 0.30.5 (MambaCache): the second turn of a conversation with a Mamba (v1)
model gets other logprobs when the server reuses the first turn's cached state than when the
same prompt is served by a fresh server. Bare reproduction (mlx-lm 0.30.5, mlx[cpu] 0.30.3,
transformers, tokenizers, httpx; no hub, no mlxcompat): `python server_mamba_multiturn.py`.

A tiny random Mamba v1 is saved with a byte-level tokenizer. One server answers turn 1 (a
16-token prompt, 6 greedy tokens), then turn 2: turn 1's prompt, its completion and a new
5-token message, one request after the other, so the server's prompt cache holds turn 1's
state and turn 2 is prefilled from it. Turn 2 is then sent to a second, fresh server, where
nothing is cached. Both requests run alone: no batching, no padding. Expected: the same
logprobs (a llama of the same size gives 0 in the harness's `server multi-turn` rows).
"""

import json
import socket
import subprocess
import sys
import tempfile
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


def serve(folder: Path) -> tuple[subprocess.Popen, str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "mlx_lm.server", "--model", str(folder),
                             "--port", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    for _ in range(300):
        try:
            if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                return proc, url
        except httpx.HTTPError:
            time.sleep(0.2)
    raise SystemExit("server did not start")


def ask(url: str, prompt: str) -> tuple[str, list[float]]:
    body = {"prompt": prompt, "max_tokens": 6, "temperature": 0.0, "logprobs": True}
    choice = httpx.post(f"{url}/v1/completions", json=body, timeout=60).json()["choices"][0]
    found = choice["logprobs"]  # 0.30.5: token_logprobs; later releases: content
    if "content" in found:
        return choice["text"], [c["logprob"] for c in found["content"]]
    return choice["text"], [float(x) for x in found["token_logprobs"]]


def main() -> None:
    first, message = "Kq7#mZ2pLw9!xRt4", "abcde"
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "mamba"
        save(folder)
        cached, url = serve(folder)
        fresh, fresh_url = serve(folder)
        try:
            answer, _ = ask(url, first)
            second = first + answer + message
            time.sleep(0.5)  # the server stores turn 1's cache after answering
            reused, got = ask(url, second)
            alone, ref = ask(fresh_url, second)
            worst = max(abs(a - b) for a, b in zip(got, ref, strict=True))
            print(f"turn 2 from the cache vs a fresh server: max |Δ logprob| {worst:.3g}, "
                  f"tokens equal: {reused == alone} (expected 0, True)")
        finally:
            cached.terminate()
            fresh.terminate()


if __name__ == "__main__":
    main()
