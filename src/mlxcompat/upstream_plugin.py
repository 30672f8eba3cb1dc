"""A pytest plugin for running mlx-lm's own tests offline, with or without a subject's patches.

Loaded with `-p mlxcompat.upstream_plugin` by `mlxcompat.upstream_suite`. Upstream's
test_generate.py and test_prompt_cache.py load `mlx-community/Qwen1.5-0.5B-Chat-4bit` from the
hub in setUpClass; with HF_HUB_OFFLINE=1 that would error every test of the class. So `load`
gives a tiny random Qwen2 (the same architecture) with an in-memory byte-level tokenizer
instead, in both runs alike: tests that check the real model's text fail both times, and only
an outcome that *changes* when the patches are applied is reported. Then, when
MLXCOMPAT_UPSTREAM_ENTRY_POINTS names entry points (JSON `{role: "module:function"}`), each is
called before any test module is imported, as a server would at start-up.
"""

from __future__ import annotations

import importlib
import json
import os
from typing import Any

import pytest

_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_CHAT = ("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n"
         "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
_CONFIG = {"model_type": "qwen2", "hidden_size": 64, "num_hidden_layers": 2,
           "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": 2,
           "rms_norm_eps": 1e-6, "vocab_size": 256 + len(_SPECIALS), "rope_theta": 1e6,
           "max_position_embeddings": 4096, "tie_word_embeddings": False}


_APPLIED = pytest.StashKey[list]()


def tiny_tokenizer() -> Any:
    """Byte-level BPE without merges: every byte one token ("!" is id 0, as in Qwen's)."""
    from mlx_lm.tokenizer_utils import TokenizerWrapper
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    core = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(_SPECIALS)
    hf = PreTrainedTokenizerFast(tokenizer_object=core, eos_token="<|im_end|>",
                                 pad_token="<|endoftext|>")
    hf.chat_template = _CHAT
    return TokenizerWrapper(hf)


def tiny_load(path_or_hf_repo: str, *args: Any, **kwargs: Any) -> Any:
    """Stands in for `mlx_lm.utils.load`: a tiny random Qwen2 and its tokenizer (seed 0)."""
    import mlx.core as mx
    from mlx_lm.models import qwen2

    mx.random.seed(0)
    model = qwen2.Model(qwen2.ModelArgs.from_dict(_CONFIG))
    mx.eval(model.parameters())
    if kwargs.get("return_config"):
        return model, tiny_tokenizer(), dict(_CONFIG)
    return model, tiny_tokenizer()


def pytest_configure(config: pytest.Config) -> None:
    import mlx_lm
    import mlx_lm.utils

    mlx_lm.utils.load = tiny_load
    if hasattr(mlx_lm, "load"):
        mlx_lm.load = tiny_load
    points = json.loads(os.environ.get("MLXCOMPAT_UPSTREAM_ENTRY_POINTS") or "{}")
    applied = []
    for role, target in sorted(points.items()):
        module, _, function = target.partition(":")
        returned = getattr(importlib.import_module(module), function)()
        applied.append(f"{role}={target} -> {returned!r}")
    config.stash[_APPLIED] = applied
    record = os.environ.get("MLXCOMPAT_UPSTREAM_RECORD")
    if record:
        with open(record, "w", encoding="utf-8") as fh:
            json.dump(applied, fh)


def pytest_report_header(config: pytest.Config) -> list[str]:
    applied = config.stash.get(_APPLIED, [])
    return ["mlxcompat upstream: hub model replaced by a tiny random qwen2",
            *(f"mlxcompat upstream: applied {line}" for line in applied)]
