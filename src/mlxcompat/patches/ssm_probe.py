"""What the installed mlx-lm gets wrong when batching SSM caches, found by trying it.

The patch's own probes (the harness judges the patch with probes of its own, never these):
small cache-level calls, and one real BatchGenerator run of a tiny random Mamba v1 model
against the same prompt run alone. The tiny model is drawn from a seed of the probe's own,
and mlx's random generator is put back where the caller had it afterwards (a server's seed
must survive the patch). Self-contained: stdlib, mlx and mlx_lm only.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
from collections.abc import Iterator
from typing import Any

import mlx.core as mx

_SMALL = {"vocab_size": 32, "hidden_size": 16, "tie_word_embeddings": False}
_GATED = {**_SMALL, "num_hidden_layers": 2, "full_attention_interval": 2,
          "intermediate_size": 32, "num_attention_heads": 2, "num_key_value_heads": 1,
          "head_dim": 8, "rms_norm_eps": 1e-5, "linear_num_value_heads": 2,
          "linear_num_key_heads": 1, "linear_key_head_dim": 8, "linear_value_head_dim": 8,
          "linear_conv_kernel_dim": 4, "num_experts": 0, "num_experts_per_tok": 0,
          "decoder_sparse_step": 1, "mlp_only_layers": [], "moe_intermediate_size": 0,
          "shared_expert_intermediate_size": 0, "max_position_embeddings": 128}
# One tiny model per SSM family the probe tries (fields a release does not know are ignored).
TINY: dict[str, dict[str, Any]] = {
    "mamba": {**_SMALL, "model_type": "mamba", "intermediate_size": 32, "state_size": 4,
              "num_hidden_layers": 1, "conv_kernel": 4, "use_bias": False,
              "use_conv_bias": True, "time_step_rank": 2},
    "mamba2": {**_SMALL, "model_type": "mamba2", "num_hidden_layers": 1, "num_heads": 2,
               "head_dim": 16, "n_groups": 1, "state_size": 4, "conv_kernel": 4,
               "intermediate_size": 32, "layer_norm_epsilon": 1e-5, "time_step_rank": 2,
               "time_step_limit": [0.0, float("inf")], "use_bias": False,
               "use_conv_bias": True},
    "qwen3_next": {**_GATED, "model_type": "qwen3_next", "rope_theta": 1e4,
                   "partial_rotary_factor": 0.5},
    "qwen3_5": {"model_type": "qwen3_5", "tie_word_embeddings": False,
                "text_config": {**_GATED, "model_type": "qwen3_5_text", "rope_parameters": {
                    "type": "default", "rope_theta": 1e4, "partial_rotary_factor": 0.5}}},
}
PROMPTS = ([5, 6, 7], [9, 8, 4, 3, 2, 1])
HISTORIES = ([3, 1, 4, 1, 5], [2, 7])  # history caches of unequal lengths ...
TAILS = ([9, 2, 6], [5, 3, 5, 8, 9])  # ... and tails of unequal lengths after them
STEPS = 3
TOLERANCE = 1e-5


def _modules() -> tuple[Any, Any]:
    return (importlib.import_module("mlx_lm.generate"),
            importlib.import_module("mlx_lm.models.cache"))


def _ssm_single() -> Any:
    cache = _modules()[1]
    single = cache.MambaCache() if hasattr(cache, "MambaCache") else cache.ArraysCache(2)
    single.cache = [mx.ones((1, 3, 4)), mx.ones((1, 4, 2))]
    return single


def history_supported() -> bool:
    """The generator takes prompt caches (history) and so merges and extracts them."""
    gen, _ = _modules()
    batch = getattr(gen, "BatchGenerator", None)
    return batch is not None and "caches" in inspect.signature(batch.insert).parameters


def extract_merge() -> str:
    """'absent' | 'broken: why' | 'ok' for ArraysCache's own extract and merge."""
    single = _ssm_single()
    kind = type(single)
    if not (hasattr(kind, "extract") and hasattr(kind, "merge")):
        return "absent"
    try:
        merged = kind.merge([single, _ssm_single()])
        padding = getattr(merged, "left_padding", None)
        if isinstance(padding, mx.array) and padding.ndim == 0:
            return "broken: merge leaves a 0-d left_padding"
        back = merged.extract(1)
    except Exception as exc:
        return f"broken: {type(exc).__name__}: {exc}"
    if type(back) is not kind:
        return f"broken: extract returns {type(back).__name__}, not {kind.__name__}"
    return "ok"


def history_dropped() -> bool:
    """The generator's `cache_length` takes an SSM cache with state for an empty one."""
    _, cache = _modules()
    length = getattr(cache, "cache_length", None)
    return length is not None and length([_ssm_single()]) == 0


@contextlib.contextmanager
def _own_seed(seed: int) -> Iterator[None]:
    """Draw from `seed` inside; afterwards the generator continues from the caller's key.

    mlx keeps one key (two uint32, `mx.random.state[0]`) and `mx.random.seed(s)` makes it
    `[s >> 32, s & 0xffffffff]`, so seeding with the saved key's 64 bits restores it exactly
    (the state cannot be assigned on mlx 0.32). Checked, not assumed: a key that does not
    come back raises, and the patch reports an error instead of a silently reseeded process.
    """
    state: Any = mx.random.state
    high, low = (int(x) for x in state[0].tolist())
    mx.random.seed(seed)
    try:
        yield
    finally:
        mx.random.seed((high << 32) | low)
        if [int(x) for x in state[0].tolist()] != [high, low]:
            raise RuntimeError("could not restore mlx's random generator after the probe")


def _responses(result: Any) -> list[Any]:
    return list(result[1]) if isinstance(result, tuple) else list(result)


def _batched_logprobs(model: Any, prompts: Any, caches: Any = None) -> list[list[Any]]:
    """Each prompt's logprobs over STEPS generated tokens from one BatchGenerator batch."""
    gen, _ = _modules()
    generator = gen.BatchGenerator(model=model, max_tokens=STEPS, completion_batch_size=4,
                                   prefill_batch_size=4)
    try:
        extra = {"caches": caches} if caches is not None else {}
        uids = generator.insert([list(p) for p in prompts], max_tokens=[STEPS] * len(prompts),
                                **extra)
        found: dict[int, list[Any]] = {u: [] for u in uids}
        for _ in range(16 * STEPS):
            for r in _responses(generator.next()):
                found[r.uid].append(r.logprobs)
            if all(len(v) >= STEPS for v in found.values()):
                break
        return [found[u] for u in uids]
    finally:
        if hasattr(generator, "close"):
            generator.close()


def _alone(model: Any, tokens: list[int]) -> list[Any]:
    """One prompt's logprobs over STEPS greedy tokens, alone (no batch, no padding)."""
    _, cache = _modules()
    layers = cache.make_prompt_cache(model)
    logits = model(mx.array([tokens]), cache=layers)[0, -1]
    out = []
    for _ in range(STEPS):
        logprobs = logits - mx.logsumexp(logits)
        out.append(logprobs)
        token = mx.argmax(logprobs).reshape(1, 1)
        logits = model(token, cache=layers)[0, -1]
    return out


def _history(model: Any, tokens: list[int]) -> list[Any]:
    _, cache = _modules()
    layers = cache.make_prompt_cache(model)
    model(mx.array([tokens]), cache=layers)
    mx.eval([c.state for c in layers])
    return layers


def _worst(batched: list[list[Any]], alone: list[list[Any]]) -> float | str:
    worst = 0.0
    for got, want in zip(batched, alone, strict=True):
        if len(got) < len(want):
            return "the batch returned fewer tokens than asked for a row"
        for g, w in zip(got, want, strict=False):
            diff: Any = mx.max(mx.abs(g - w)).item()
            worst = max(worst, float(diff))
    return worst


def _leak_of(model: Any) -> str:
    """'' when padded batches (new prompts; history with unequal tails) equal each prompt
    alone over STEPS tokens, else what differs (a batch that does not run, its history
    caches included, says so: it is never taken for exact)."""
    cases: list[tuple[str, Any, Any, list[list[int]]]] = [
        ("new prompts", PROMPTS, lambda: None, [list(p) for p in PROMPTS])]
    if history_supported():
        cases.append(("history", TAILS, lambda: [_history(model, h) for h in HISTORIES],
                      [h + t for h, t in zip(HISTORIES, TAILS, strict=True)]))
    for what, prompts, caches, whole in cases:
        try:
            mx.eval(model.parameters())
            worst = _worst(_batched_logprobs(model, prompts, caches()),
                           [_alone(model, w) for w in whole])
        except Exception as exc:
            return f"a padded batch ({what}) does not run ({type(exc).__name__}: {exc})"
        if isinstance(worst, str):
            return worst
        if worst > TOLERANCE:
            return f"padding reaches the state in batched prefill ({what}, |Δ logprob| {worst:.1e})"
    return ""


def padding_leaks() -> dict[str, str]:
    """Per SSM family this release ships and the probe has a tiny model of: '' when its
    padded batches equal each prompt alone, else what differs. A family missing here (not
    shipped, no tiny model, or its model did not build) was not tried: the patch segments it.
    Mamba v1 reads no padding mask at all, so it leaks in every release."""
    found: dict[str, str] = {}
    with _own_seed(7):
        for family, config in TINY.items():
            try:
                module = importlib.import_module(f"mlx_lm.models.{family}")
                model = module.Model(module.ModelArgs.from_dict(config))
            except Exception:
                continue
            found[family] = _leak_of(model)
    return found
