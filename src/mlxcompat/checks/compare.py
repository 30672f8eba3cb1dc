"""The one comparison every check uses: batched rows against their one-at-a-time reference.

Greedy tokens must match exactly and the max |Δ| of the score vectors (logprobs or logits)
stay within the tolerance. It fails closed: no rows, a row with no tokens, a score count that
differs from the token count, a stalled row, or a NaN / inf anywhere in either run is a
failure that names the row, never a silent pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np


@dataclass
class Comparison:
    """The comparator's finding: verdict, max |Δ| (None when a score was not finite), whether
    greedy tokens matched, per-row details, and a one-line reason."""

    verdict: str
    delta: float | None
    tokens_equal: bool
    detail: str
    metrics: dict[str, Any] = field(default_factory=dict)

    def fields(self) -> dict[str, Any]:
        """The ResultRow fields this comparison fills."""
        return {"delta": self.delta, "tokens_equal": self.tokens_equal, "metrics": self.metrics,
                "detail": self.detail}


def _finite(steps: Sequence[Any]) -> bool:
    return all(bool(np.all(np.isfinite(np.asarray(s, dtype=np.float64)))) for s in steps)


def _shape_problems(batched: Sequence[Sequence[Any]], reference: Sequence[Sequence[Any]],
                    batched_tokens: Sequence[Sequence[int]],
                    reference_tokens: Sequence[Sequence[int]]) -> list[str]:
    if not (len(batched) == len(reference) == len(batched_tokens) == len(reference_tokens)):
        return [f"row counts differ (batched scores {len(batched)}, reference scores "
                f"{len(reference)}, batched tokens {len(batched_tokens)}, reference tokens "
                f"{len(reference_tokens)})"]
    if not batched:
        return ["no rows were compared"]
    problems = []
    for row, (b, r, bt, rt) in enumerate(zip(batched, reference, batched_tokens,
                                             reference_tokens, strict=True)):
        if not bt or not rt:
            problems.append(f"row {row} has no tokens (batched {len(bt)}, reference {len(rt)})")
        if len(b) != len(bt) or len(r) != len(rt):
            problems.append(f"row {row}: {len(b)} scores for {len(bt)} batched tokens, "
                            f"{len(r)} for {len(rt)} reference tokens")
    return problems


def compare_rows(
    batched: Sequence[Sequence[Any]],
    reference: Sequence[Sequence[Any]],
    batched_tokens: Sequence[Sequence[int]],
    reference_tokens: Sequence[Sequence[int]],
    tolerance: float,
    stalled: Sequence[int] = (),
) -> Comparison:
    """Compare per-row score vectors and greedy tokens.

    Scores are compared only up to a row's first token mismatch: past it the two runs are
    conditioned on different inputs and their difference means nothing.
    """
    problems = _shape_problems(batched, reference, batched_tokens, reference_tokens)
    if problems and not batched:
        return Comparison("fail", None, False, "; ".join(problems),
                          {"rows": 0, "tolerance": tolerance})
    rows = min(len(batched), len(reference), len(batched_tokens), len(reference_tokens))
    max_delta = 0.0
    row_delta: dict[str, float] = {}
    mismatched: list[dict[str, Any]] = []
    non_finite: list[int] = []
    for row in range(rows):
        b_scores, r_scores = batched[row], reference[row]
        b_tok, r_tok = list(batched_tokens[row]), list(reference_tokens[row])
        if not (_finite(b_scores) and _finite(r_scores)):
            non_finite.append(row)  # NaN would compare as "no larger" and hide the row
            continue
        diverge = next((i for i, (x, y) in enumerate(zip(b_tok, r_tok, strict=False)) if x != y),
                       min(len(b_tok), len(r_tok)))
        worst = 0.0
        for b, r in zip(b_scores[: diverge + 1], r_scores[: diverge + 1], strict=False):
            delta = np.abs(np.asarray(b, dtype=np.float64) - np.asarray(r, dtype=np.float64))
            worst = max(worst, float(np.max(delta)) if delta.size else 0.0)
        row_delta[str(row)] = worst
        max_delta = max(max_delta, worst)
        if b_tok != r_tok:
            mismatched.append({"row": row, "first_diff": diverge, "batched": b_tok,
                               "single": r_tok})
    tokens_equal = not mismatched and not stalled
    found = None if non_finite else max_delta
    metrics = {
        "non_finite_rows": non_finite,
        "tolerance": tolerance,
        "rows": rows,
        "mismatched_rows": mismatched,
        "row_max_abs_delta": row_delta,
        "stalled_rows": list(stalled),
        "tokens_per_row": [len(t) for t in batched_tokens],
    }
    reasons = list(problems)
    if stalled:
        reasons.append(f"rows {list(stalled)} stalled (the batch stopped returning them)")
    if non_finite:
        reasons.append(f"NaN/inf scores in rows {non_finite}")
    if mismatched:
        where = ", ".join(f"row {m['row']} from step {m['first_diff']}" for m in mismatched)
        reasons.append(f"tokens differ ({where})")
    if not non_finite and max_delta > tolerance:
        reasons.append(f"max |Δ| {max_delta:.2e} > {tolerance:.0e}")
    if reasons:
        return Comparison("fail", found, tokens_equal, "; ".join(reasons), metrics)
    return Comparison("pass", found, tokens_equal, f"max |Δ| {max_delta:.2e} <= {tolerance:.0e}",
                      metrics)
