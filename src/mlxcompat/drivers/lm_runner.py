"""Run mlx-lm models two ways: batched through BatchGenerator, and one prompt alone.

Every call-shape difference between releases (keyword-only constructor, list vs tuple from
`next()`, `max_tokens` as a list, `generate_step`'s positional stream) is absorbed here.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mlx.core as mx
import numpy as np

from mlxcompat.drivers.lm_rows import Row
from mlxcompat.drivers.modules import cache_module, generate_module, host_int
from mlxcompat.errors import SkipCheck


@dataclass
class RowOutput:
    tokens: list[int] = field(default_factory=list)
    logprobs: list[np.ndarray] = field(default_factory=list)
    finish_reason: str | None = None
    cache: Any = None


def make_history_cache(model: Any, history: Sequence[int]) -> list[Any]:
    """A prompt cache that already holds `history`, as a server keeps it between turns."""
    cache = cache_module().make_prompt_cache(model)
    model(mx.array([list(history)]), cache=cache)
    mx.eval([c.state for c in cache])
    return cache


SINGLE_TOKENS = 9  # the most any parity row asks for: one run serves every shorter request


def run_single(model: Any, row: Row) -> RowOutput:
    """The oracle: the prompt (history + tail) alone through `generate_step`, greedy.

    Greedy decoding of one prompt is deterministic, so the first n tokens of a longer run are
    the n-token run: each prompt is decoded once per model, and sliced. The decodes live on the
    model object itself, never in a table keyed by id(): CPython reuses a freed model's id for
    the next one, and a stale oracle from another model is a wrong verdict.
    """
    tokens = tuple(list(row.history or []) + list(row.prompt))
    singles: dict[tuple[int, ...], RowOutput] = model.__dict__.setdefault(
        "_mlxcompat_singles", {})
    cached = singles.get(tokens)
    if cached is None or len(cached.tokens) < row.max_tokens:
        cached = _decode_alone(model, list(tokens), max(row.max_tokens, SINGLE_TOKENS))
        singles[tokens] = cached
    return RowOutput(list(cached.tokens[:row.max_tokens]),
                     list(cached.logprobs[:row.max_tokens]), "length")


def _decode_alone(model: Any, tokens: list[int], max_tokens: int) -> RowOutput:
    gen = generate_module()
    out = RowOutput()
    steps = gen.generate_step(prompt=mx.array(tokens), model=model, max_tokens=max_tokens)
    for token, logprobs in steps:
        out.tokens.append(host_int(token))
        out.logprobs.append(np.array(logprobs.astype(mx.float32)))
    out.finish_reason = "length"
    return out


def _generation_responses(result: Any) -> list[Any]:
    """`next()` gives a list up to 0.31.1 and `(prompt_responses, generation_responses)` after."""
    if isinstance(result, tuple):
        return list(result[1])
    return list(result)


def new_batch_generator(model: Any, max_batch: int = 64, **kwargs: Any) -> Any:
    """A greedy BatchGenerator wide enough that parity runs never queue rows (keywords only)."""
    return generate_module().BatchGenerator(
        model=model,
        max_tokens=kwargs.pop("max_tokens", 16),
        completion_batch_size=max_batch,
        prefill_batch_size=max_batch,
        **kwargs,
    )


def insert_rows(generator: Any, model: Any, rows: Sequence[Row]) -> list[int]:
    """Insert rows with per-row max_tokens (always a list) and history caches where given."""
    kwargs: dict[str, Any] = {"max_tokens": [r.max_tokens for r in rows]}
    if any(r.history for r in rows):
        if "caches" not in inspect.signature(generator.insert).parameters:
            raise SkipCheck("this BatchGenerator.insert takes no prompt caches (no history)")
        kwargs["caches"] = [
            make_history_cache(model, r.history) if r.history else None for r in rows
        ]
    return list(generator.insert([list(r.prompt) for r in rows], **kwargs))


def step(generator: Any) -> list[Any]:
    """One `next()` call; returns only generation responses (empty while prefilling)."""
    return _generation_responses(generator.next())


def close(generator: Any) -> None:
    closer = getattr(generator, "close", None)
    if closer is not None:
        closer()


MAX_EMPTY_STEPS = 64


def _remove_due(generator: Any, rows: Sequence[Row], outputs: list[RowOutput],
                by_uid: dict[int, int]) -> None:
    """Remove every running row that has reached its `remove_after`."""
    due = [uid for uid, i in by_uid.items() if rows[i].remove_after is not None
           and outputs[i].finish_reason is None
           and len(outputs[i].tokens) >= int(rows[i].remove_after or 0)]
    if due:
        generator.remove(due)
        for uid in due:
            outputs[by_uid[uid]].finish_reason = "removed"


def run_batched(model: Any, rows: Sequence[Row], **generator: Any) -> list[RowOutput]:
    """Drive BatchGenerator over `rows` (joining at their steps) until every row finished.

    `generator` goes to the constructor (e.g. `prefill_step_size`); a row with
    `remove_after` is removed (`remove([uid])`) once it has that many tokens, as a server
    does with a request whose client went away; its finish reason is then "removed".

    The number of `next()` calls is capped (every token the rows asked for, plus slack for
    prefill steps), and so is a run of calls that return nothing: a generator that drops a
    row stops there, and the rows left unfinished (finish_reason None) are the ones that
    stalled.
    """
    generator = new_batch_generator(model, **generator)
    outputs = [RowOutput() for _ in rows]
    by_uid: dict[int, int] = {}
    pending = sorted(range(len(rows)), key=lambda i: rows[i].join_after)
    budget = sum(r.max_tokens for r in rows) + 4 * len(rows) + MAX_EMPTY_STEPS
    steps = calls = empty = 0
    try:
        while calls < budget and empty < MAX_EMPTY_STEPS:
            joining = [i for i in pending if rows[i].join_after <= steps]
            if joining:
                pending = [i for i in pending if i not in joining]
                uids = insert_rows(generator, model, [rows[i] for i in joining])
                by_uid.update(zip(uids, joining, strict=True))
            if not pending and all(o.finish_reason for o in outputs):
                break
            responses = step(generator)
            calls += 1
            empty = 0 if responses else empty + 1
            for r in responses:
                out = outputs[by_uid[r.uid]]
                if out.finish_reason == "removed":
                    continue  # a token computed before the removal took effect
                out.tokens.append(int(r.token))
                if r.logprobs is None:  # vMLX 1.6.81's GenerationBatch._step keeps them only
                    raise RuntimeError(  # for uids it registered itself
                        "BatchGenerator returned no logprobs (None) for a generated token: "
                        "its Response no longer carries the scores it did upstream")
                out.logprobs.append(np.array(r.logprobs.astype(mx.float32)))
                if r.finish_reason is not None:
                    out.finish_reason = r.finish_reason
                    out.cache = getattr(r, "prompt_cache", None)
            _remove_due(generator, rows, outputs, by_uid)
            steps += bool(responses)
            if pending and all(outputs[i].finish_reason for i in by_uid.values()):
                steps = max(steps, rows[pending[0]].join_after)  # nothing left running
    finally:
        close(generator)
    return outputs
