"""Parity: batched output equals each prompt run alone, in every parity mode of the registry."""

from __future__ import annotations

from typing import Any

import numpy as np

from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.drivers.lm_rows import Row
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import PARITY_MODES, Registry

MODES = PARITY_MODES
_PROMPT_LENGTHS = (7, 3, 5, 9)
_VOCAB = 128


def _tokens(rng: np.random.Generator, n: int) -> list[int]:
    return [int(t) for t in rng.integers(1, _VOCAB, size=n)]


def _tails(rng: np.random.Generator, lengths: tuple[int, ...] = (3, 1, 4, 2)) -> list[list[int]]:
    return [_tokens(rng, n) for n in lengths]


def _with_history(prompts: list[list[int]], tails: list[list[int]], picked: Any) -> list[Row]:
    """Rows `picked(i)` carry their prompt as history and a tail; the others are new."""
    return [Row(t, 5, history=p) if picked(i) else Row(p, 5)
            for i, (p, t) in enumerate(zip(prompts, tails, strict=True))]


# mode -> rows from the prompts (tails are drawn after them, from the same generator)
_MODES: dict[str, Any] = {
    "fresh": lambda p, rng: [Row(x, 6) for x in p],
    "staggered": lambda p, rng: [Row(x, 6, join_after=0 if i < 2 else 2)
                                 for i, x in enumerate(p)],
    "leave": lambda p, rng: [Row(x, m) for x, m in zip(p, (2, 7, 4, 9), strict=True)],
    "history": lambda p, rng: _with_history(p, _tails(rng), lambda i: True),
    "history-equal": lambda p, rng: _with_history(p, _tails(rng, (3, 3, 3, 3)), lambda i: True),
    "history-mixed": lambda p, rng: _with_history(p, _tails(rng), lambda i: i % 2 == 0),
    "history-single": lambda p, rng: _with_history(p, _tails(rng), lambda i: i == 2),
    "history-join": lambda p, rng: [
        Row(x, 7) if i < 2 else Row(t, 5, history=x, join_after=2)
        for i, (x, t) in enumerate(zip(p, _tails(rng), strict=True))],
}


def parity_rows(mode: str, seed: int = 0) -> list[Row]:
    """The requests of a mode: always prompts of different lengths.

    fresh: all together; staggered: half join after two steps (cache extend); leave: unequal
    max_tokens so rows finish while others go on (cache filter / extract); history: rows
    carry their own prefilled caches and unequal remaining tails (cache merge);
    history-equal: the same with equal tails, so no tail is padded and a failure there is
    about carrying history at all, not about masking padding; history-mixed: half the rows
    bring history, half are new; history-single: one row of four brings history;
    history-join: two new rows run, then two rows with history join them (merge, then extend).
    """
    if mode not in _MODES:
        raise ValueError(f"unknown parity mode {mode!r}; expected one of {MODES}")
    rng = np.random.default_rng(seed)
    prompts = [_tokens(rng, n) for n in _PROMPT_LENGTHS]
    return list(_MODES[mode](prompts, rng))


def run_parity(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    """Batched (BatchGenerator) vs single (`generate_step`) greedy tokens and logprobs."""

    def body() -> ResultRow:
        from mlxcompat.drivers.lm_runner import run_batched, run_single

        model = ctx.registry.models[case.model]
        if model.runner != "lm":
            raise ValueError(f"{model.name} is not driven by BatchGenerator")
        net = build_model(model, seed)
        rows = parity_rows(case.mode, seed)
        batched = run_batched(net, rows)
        single = [run_single(net, r) for r in rows]
        found = compare_rows(
            [b.logprobs for b in batched],
            [s.logprobs for s in single],
            [b.tokens for b in batched],
            [s.tokens for s in single],
            ctx.tolerance,
            stalled=[i for i, b in enumerate(batched) if b.finish_reason is None],
        )
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def parity_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("parity", model=m.name, mode=mode)
                              for m in selection.models_of("lm") for mode in m.modes])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"mode": PARITY_MODES}


SPEC = CheckSpec("parity", ("model", "mode", "subject"), parity_cases, run_parity, _values)
