"""mlx_lm.server 0.29.1: a request asking for logprobs that arrives while a batch of requests
without logprobs is decoding kills the generation thread (NameError: name 'gen' is not
defined, server.py _generate) and the server never answers again. Bare reproduction
(mlx-lm 0.29.1, mlx[cpu] 0.29.2, transformers, tokenizers, httpx; no hub):
`python server_0291_logprobs_nameerror.py`.

The batch loop formats top logprobs with `args` (the request read last, here the one with
logprobs, which is not batchable and waits for the batch to drain) and an undefined `gen`.
Seen with 0.29.1, 0.30.0 and 0.30.4: both requests time out and the server log has the
NameError. Expected: both answered. 0.30.5 and 0.31.3 keep `top_logprobs` per request and
answer both.
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
from mlx_lm.models import llama
from mlx_lm.utils import save_model
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

CONFIG = {"model_type": "llama", "vocab_size": 94, "hidden_size": 64, "num_hidden_layers": 2,
          "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
          "rms_norm_eps": 1e-5, "tie_word_embeddings": False}


def save(folder: Path) -> None:
    mx.random.seed(0)
    model = llama.Model(llama.ModelArgs.from_dict(CONFIG))
    mx.eval(model.parameters())
    save_model(folder, model)
    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(symbols)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(["<|im_end|>"])
    PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>").save_pretrained(
        str(folder))
    (folder / "config.json").write_text(json.dumps(CONFIG))


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "llama"
        save(folder)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen([sys.executable, "-m", "mlx_lm.server", "--model",
                                   str(folder), "--port", str(port)],
                                  stderr=subprocess.PIPE, text=True)
        url = f"http://127.0.0.1:{port}"
        for _ in range(300):
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        answers: dict[str, str] = {}

        def ask(name: str, body: dict) -> None:
            try:
                httpx.post(f"{url}/v1/completions", json=body, timeout=20).raise_for_status()
                answers[name] = "answered"
            except httpx.HTTPError as exc:
                answers[name] = f"{type(exc).__name__}"

        plain = threading.Thread(target=ask, args=("without logprobs", {
            "prompt": "abcdefgh", "max_tokens": 400, "temperature": 0.0}))
        plain.start()
        time.sleep(0.3)  # the first request is decoding in a batch
        ask("with logprobs", {"prompt": "ijklmnop", "max_tokens": 4, "temperature": 0.0,
                              "logprobs": True})
        plain.join()
        server.terminate()
        log = server.communicate(timeout=30)[1]
        print(answers)
        print(next((line for line in log.splitlines() if "NameError" in line), "no NameError"))


if __name__ == "__main__":
    main()
