"""Cache contract: extract every row of a batch cache and merge them back; decoding goes on
exactly as from the unsplit batch."""

from __future__ import annotations

import copy

from mlxcompat.checks import DEFAULT_TOLERANCE, guarded
from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.parity import parity_rows
from mlxcompat.models import build_model
from mlxcompat.registry import ModelDecl
from mlxcompat.results import CheckResult

_WARMUP_STEPS = 2
_CHECK_STEPS = 4


def check_cache_contract(
    model: ModelDecl, subject: str, tolerance: float = DEFAULT_TOLERANCE, seed: int = 0
) -> CheckResult:
    """Prefill rows alone, merge, decode; then split (extract) + re-merge and compare."""

    def body() -> CheckResult:
        from mlxcompat.drivers.lm_cache import decode_steps, extract_rows, merge_rows, prefill_alone

        net = build_model(model, seed)
        prompts = [r.prompt for r in parity_rows("fresh", seed)]
        singles = [prefill_alone(net, p) for p in prompts]
        batch = merge_rows([c for c, _ in singles])
        warm, _ = decode_steps(net, batch, [t for _, t in singles], _WARMUP_STEPS)
        last = [row[-1] for row in warm]
        remerged = merge_rows(extract_rows(batch, len(prompts)))
        unsplit_tokens, unsplit = decode_steps(net, copy.copy(batch), last, _CHECK_STEPS)
        split_tokens, split = decode_steps(net, remerged, last, _CHECK_STEPS)
        verdict, metrics, detail = compare_rows(
            split, unsplit, split_tokens, unsplit_tokens, tolerance
        )
        return CheckResult("cache-contract", verdict, "extract-merge", model.name, subject,  # type: ignore[arg-type]
                           metrics, detail)

    return guarded("cache-contract", "extract-merge", model.name, subject, body)
