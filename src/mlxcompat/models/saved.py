"""A tiny model saved as a server loads one: config.json, safetensors and a tokenizer made
offline (no hub), in a folder of its own.

Every token is one printable ASCII character (the first 94 symbols of the byte-level
alphabet, `!` to `~`), so a completion's text maps back to its token ids exactly and a prompt
is plain text. The vocabulary is those 94 symbols; EOS and the other specials lie outside the
model's logits, so completions always run to `max_tokens`. config.json is written here as
plain JSON: 0.32's `save_config` writes `inf` in a form 0.29 / 0.31 cannot read back.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from mlxcompat.models.lm import LM_CONFIGS, construct

VOCAB = 94  # '!' .. '~': ids 0..93 of the sorted byte-level alphabet
SPECIALS = ["<|endoftext|>", "<|im_end|>"]
QUANT = {"group_size": 32, "bits": 4}
DTYPES = ("float32", "bfloat16", "float16", "q4")


def alphabet() -> str:
    """The token of each id: id i is the i-th printable ASCII character after the space."""
    return "".join(chr(c) for c in range(33, 33 + VOCAB))


def to_ids(text: str) -> list[int]:
    return [ord(c) - 33 for c in text]


def to_text(ids: list[int]) -> str:
    return "".join(chr(33 + i) for i in ids)


def server_config(name: str) -> dict[str, Any]:
    """The tiny model's config with the server vocabulary (nested text_config included)."""
    config = json.loads(json.dumps(LM_CONFIGS[name], default=str))
    for part in (config, config.get("text_config")):
        if isinstance(part, dict) and "vocab_size" in part:
            part["vocab_size"] = VOCAB
    return config


def _plain(value: Any) -> Any:
    """JSON without `inf` (written as a large finite number every release reads)."""
    if isinstance(value, float) and math.isinf(value):
        return 1e30 if value > 0 else -1e30
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def build(name: str, seed: int, dtype: str) -> tuple[Any, dict[str, Any]]:
    """The model (weights in `dtype`; `q4` = 4-bit, group 32) and the config that loads it."""
    import mlx.core as mx
    import mlx.nn as nn

    from mlxcompat.models.evaluate import evaluate_all

    config = server_config(name)
    model = construct(name, config, seed)
    if dtype in ("bfloat16", "float16"):
        model.set_dtype(getattr(mx, dtype))
    elif dtype == "q4":
        nn.quantize(model, **QUANT)
        config["quantization"] = dict(QUANT)
    return evaluate_all(model), config


def tokenizer() -> Any:
    """A byte-level BPE without merges, as a transformers fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    symbols = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(symbols)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(SPECIALS)
    assert "".join(symbols[:VOCAB]) == alphabet()
    return PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                   pad_token="<|endoftext|>")


def save_tiny(name: str, folder: Path, seed: int = 0, dtype: str = "float32") -> Path:
    """Write the tiny `name` model to `folder` the way `mlx_lm.load` reads one."""
    from mlx_lm.utils import save_model

    if dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r}; known: {', '.join(DTYPES)}")
    model, config = build(name, seed, dtype)
    folder.mkdir(parents=True, exist_ok=True)
    save_model(folder, model)
    tokenizer().save_pretrained(str(folder))
    (folder / "config.json").write_text(json.dumps(_plain(config), indent=1), encoding="utf-8")
    return folder
