"""`shapes`: parity at the shapes a server meets and the parity modes do not.

Modes (BatchGenerator against each prompt alone through `generate_step`, one comparator):
- `long-prompt`: prompts of 41 to 300 tokens with `prefill_step_size` 64, which divides none
  of them (chunked prefill; our segmented prefill where installed);
- `wide`: 16 rows of different lengths finishing on different steps;
- `same-finish`: 8 rows of different lengths all finishing on one step;
- `lone-history`: a batch of one row that brings its history (merge of a single cache);
- `cancel`: 6 rows, two removed mid-decode (`BatchGenerator.remove`, as a server does when
  its client goes away); their tokens up to the removal and every other row are compared.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.drivers.lm_rows import Row
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

MODES = ("long-prompt", "wide", "same-finish", "lone-history", "cancel")
PREFILL_STEP = 64
_VOCAB = 128


def _tokens(rng: np.random.Generator, n: int) -> list[int]:
    return [int(t) for t in rng.integers(1, _VOCAB, size=n)]


def shape_rows(mode: str, seed: int = 0) -> tuple[list[Row], dict[str, Any]]:
    """The requests of a shape mode and the generator's keyword arguments."""
    rng = np.random.default_rng(seed + 17)
    if mode == "long-prompt":
        return ([Row(_tokens(rng, n), m) for n, m in zip((300, 177, 41, 233), (4, 6, 5, 3),
                                                           strict=True)],
                {"prefill_step_size": PREFILL_STEP})
    if mode == "wide":
        return [Row(_tokens(rng, 3 + i), 2 + (i * 5) % 8) for i in range(16)], {}
    if mode == "same-finish":
        return [Row(_tokens(rng, 2 + 2 * i), 5) for i in range(8)], {}
    if mode == "lone-history":
        return [Row(_tokens(rng, 4), 5, history=_tokens(rng, 9))], {}
    if mode == "cancel":
        return [Row(_tokens(rng, n), 8, remove_after={1: 2, 4: 3}.get(i))
                for i, n in enumerate((5, 9, 3, 7, 11, 6))], {}
    raise ValueError(f"unknown shape mode {mode!r}; expected one of {MODES}")


def run_shapes(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    def body() -> ResultRow:
        from mlxcompat.drivers.lm_runner import run_batched, run_single

        net = build_model(ctx.registry.models[case.model], seed)
        rows, options = shape_rows(case.mode, seed)
        batched = run_batched(net, rows, **options)
        single = [run_single(net, r) for r in rows]
        reference = [s.tokens[:len(b.tokens)] if r.remove_after is not None else s.tokens
                     for r, b, s in zip(rows, batched, single, strict=True)]
        scores = [s.logprobs[:len(t)] for s, t in zip(single, reference, strict=True)]
        found = compare_rows([b.logprobs for b in batched], scores,
                             [b.tokens for b in batched], reference, ctx.tolerance,
                             stalled=[i for i, b in enumerate(batched) if b.finish_reason is None])
        removed = [i for i, r in enumerate(rows) if r.remove_after is not None]
        found.metrics.update(rows_in_batch=len(rows), removed_rows=removed, **options)
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def shape_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("shapes", model=m.name, mode=mode)
                              for m in selection.models_of("lm") for mode in MODES])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"mode": MODES}


SPEC = CheckSpec("shapes", ("model", "mode", "subject"), shape_cases, run_shapes, _values,
                 default=False)
