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

TINY_MAMBA = {"model_type": "mamba", "vocab_size": 32, "hidden_size": 16,
              "intermediate_size": 32, "state_size": 4, "num_hidden_layers": 1,
              "conv_kernel": 4, "use_bias": False, "use_conv_bias": True, "time_step_rank": 2,
              "tie_word_embeddings": False}
PROMPTS = ([5, 6, 7], [9, 8, 4, 3, 2, 1])
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


def _first_logprobs(model: Any) -> list[Any]:
    """Each prompt's first generated logprobs from one BatchGenerator batch."""
    gen, _ = _modules()
    generator = gen.BatchGenerator(model=model, max_tokens=1, completion_batch_size=4,
                                   prefill_batch_size=4)
    try:
        uids = generator.insert([list(p) for p in PROMPTS], max_tokens=[1] * len(PROMPTS))
        found: dict[int, Any] = {}
        for _ in range(16):
            for r in _responses(generator.next()):
                found.setdefault(r.uid, r.logprobs)
            if len(found) == len(uids):
                break
        return [found.get(u) for u in uids]
    finally:
        if hasattr(generator, "close"):
            generator.close()


def padding_leak() -> str:
    """'' when a left/right-padded batch of a tiny Mamba v1 model equals each prompt alone,
    else what differs (Mamba v1 reads no padding mask, so any padding reaches its state)."""
    try:
        mamba = importlib.import_module("mlx_lm.models.mamba")
    except ModuleNotFoundError:
        return ""
    with _own_seed(7):
        return _leak(mamba)


def _leak(mamba: Any) -> str:
    _, cache = _modules()
    model = mamba.Model(mamba.ModelArgs.from_dict(TINY_MAMBA))
    mx.eval(model.parameters())
    try:
        batched = _first_logprobs(model)
    except Exception as exc:
        return f"a padded Mamba v1 batch does not run ({type(exc).__name__}: {exc})"
    worst = 0.0
    for prompt, got in zip(PROMPTS, batched, strict=True):
        if got is None:
            return "the batch returned no token for a row"
        logits = model(mx.array([list(prompt)]), cache=cache.make_prompt_cache(model))[0, -1]
        want = logits - mx.logsumexp(logits)
        diff: Any = mx.max(mx.abs(got - want)).item()
        worst = max(worst, float(diff))
    if worst > TOLERANCE:
        return f"padding reaches Mamba v1's state in batched prefill (|Δ logprob| {worst:.1e})"
    return ""
