"""Cache contract: extract every row of a batch cache and merge them back; decoding goes on
exactly as from the unsplit batch."""

from __future__ import annotations

import copy

from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.parity import parity_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

SCENARIOS = ("extract-merge",)

_WARMUP_STEPS = 2
_CHECK_STEPS = 4


def run_cache_contract(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    """Prefill rows alone, merge, decode; then split (extract) + re-merge and compare."""

    def body() -> ResultRow:
        from mlxcompat.drivers.lm_cache import decode_steps, extract_rows, merge_rows, prefill_alone

        net = build_model(ctx.registry.models[case.model], seed)
        prompts = [r.prompt for r in parity_rows("fresh", seed)]
        singles = [prefill_alone(net, p) for p in prompts]
        batch = merge_rows([c for c, _ in singles])
        warm, _ = decode_steps(net, batch, [t for _, t in singles], _WARMUP_STEPS)
        last = [row[-1] for row in warm]
        remerged = merge_rows(extract_rows(batch, len(prompts)))
        unsplit_tokens, unsplit = decode_steps(net, copy.copy(batch), last, _CHECK_STEPS)
        split_tokens, split = decode_steps(net, remerged, last, _CHECK_STEPS)
        found = compare_rows(split, unsplit, split_tokens, unsplit_tokens, ctx.tolerance)
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def cache_contract_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("cache-contract", model=m.name, scenario=s)
                              for m in selection.models_of("lm") for s in SCENARIOS])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"scenario": SCENARIOS}


SPEC = CheckSpec("cache-contract", ("model", "subject"), cache_contract_cases,
                 run_cache_contract, _values)
