"""Compare batched rows against their one-at-a-time reference: exact tokens, max |Δ|."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def compare_rows(
    batched: Sequence[Sequence[Any]],
    reference: Sequence[Sequence[Any]],
    batched_tokens: Sequence[Sequence[int]],
    reference_tokens: Sequence[Sequence[int]],
    tolerance: float,
) -> tuple[str, dict[str, Any], str]:
    """Return (verdict, metrics, detail) for per-row score vectors and greedy tokens.

    Scores are compared only up to a row's first token mismatch: past it the two runs are
    conditioned on different inputs and their difference means nothing.
    """
    max_delta = 0.0
    mismatched: list[dict[str, Any]] = []
    non_finite: list[int] = []
    for row, (b_scores, r_scores, b_tok, r_tok) in enumerate(
        zip(batched, reference, batched_tokens, reference_tokens, strict=True)
    ):
        diverge = next(
            (i for i, (x, y) in enumerate(zip(b_tok, r_tok, strict=False)) if x != y),
            min(len(b_tok), len(r_tok)),
        )
        for b, r in zip(b_scores[: diverge + 1], r_scores[: diverge + 1], strict=False):
            delta = np.abs(np.asarray(b, dtype=np.float64) - np.asarray(r, dtype=np.float64))
            if not np.all(np.isfinite(delta)):
                non_finite.append(row)  # NaN would compare as "no larger" and hide the row
                break
            max_delta = max(max_delta, float(np.max(delta)))
        if list(b_tok) != list(r_tok):
            mismatched.append(
                {"row": row, "first_diff": diverge, "batched": list(b_tok), "single": list(r_tok)}
            )
    tokens_equal = not mismatched
    non_finite = sorted(set(non_finite))
    metrics = {
        "max_abs_delta": None if non_finite else max_delta,
        "non_finite_rows": non_finite,
        "tolerance": tolerance,
        "tokens_equal": tokens_equal,
        "rows": len(batched),
        "mismatched_rows": mismatched,
    }
    if tokens_equal and not non_finite and max_delta <= tolerance:
        return "pass", metrics, f"max |Δ| {max_delta:.2e} <= {tolerance:.0e}"
    reasons = []
    if non_finite:
        reasons.append(f"NaN/inf scores in rows {non_finite}")
    if not tokens_equal:
        rows = ", ".join(f"row {m['row']} from step {m['first_diff']}" for m in mismatched)
        reasons.append(f"tokens differ ({rows})")
    if not non_finite and max_delta > tolerance:
        reasons.append(f"max |Δ| {max_delta:.2e} > {tolerance:.0e}")
    return "fail", metrics, "; ".join(reasons)
