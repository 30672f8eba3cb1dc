"""GLM4V language-model parity: batched BatchKVCache decoding vs each prompt alone.

Every scenario ends with, for each prompt, the list of last-position logits the batch produced
for it; the oracle is the same prompt through plain KVCaches in the same process and path.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from mlxcompat.checks import guarded
from mlxcompat.results import CheckResult

GLM4V_SCENARIOS: tuple[str, ...] = (
    "equal",
    "padded",
    "padded-reversed",
    "filter",
    "extend",
    "merge",
)
GLM4V_PATHS: tuple[str, ...] = ("inner", "outer")

_SHORT, _MID, _LONG = [5, 17, 42], [9, 3, 77, 21, 64], [11, 99, 4, 58, 30, 120, 7, 66]
_EQUAL = [[12, 40, 7, 91, 33], [88, 2, 56, 19, 70]]
STEPS = 4  # logits per row: the prefill plus three greedy decode steps

Rows = dict[int, list[Any]]


def _greedy(logits: Any) -> list[int]:
    import mlx.core as mx

    return [int(t) for t in mx.argmax(logits, axis=-1).tolist()]


def _record(rows: Rows, order: list[int], logits: Any) -> None:
    """File each batch row's logits under the prompt index it belongs to."""
    for i, row in enumerate(order):
        rows[row].append(logits[i])


def _decode(runner: Any, rows: Rows, order: list[int], logits: Any, steps: int) -> Any:
    """`steps` times: record the current logits, then feed each row its greedy token."""
    for _ in range(steps):
        _record(rows, order, logits)
        logits = runner.step(_greedy(logits))
    return logits


def _joint(prompts: list[list[int]]) -> Callable[[Any], tuple[list[list[int]], Rows]]:
    def run(runner: Any) -> tuple[list[list[int]], Rows]:
        order = list(range(len(prompts)))
        rows: Rows = {i: [] for i in order}
        logits = _decode(runner, rows, order, runner.prefill(prompts), STEPS - 1)
        _record(rows, order, logits)
        return prompts, rows

    return run


def _filter(runner: Any) -> tuple[list[list[int]], Rows]:
    """The longest row leaves after two steps; the others carry on in a narrower batch."""
    prompts = [_SHORT, _LONG, _MID]
    order = [0, 1, 2]
    rows: Rows = {i: [] for i in order}
    logits = _decode(runner, rows, order, runner.prefill(prompts), 2)
    keep = [0, 2]
    runner.filter(keep)
    logits = _decode(runner, rows, keep, _take(logits, keep), STEPS - 3)
    _record(rows, keep, logits)
    return prompts, rows


def _take(logits: Any, indices: list[int]) -> Any:
    import mlx.core as mx

    return logits[mx.array(indices, dtype=mx.int32)]


def _extend(runner: Any) -> tuple[list[list[int]], Rows]:
    """A longer prompt joins after one joint step; all rows then decode together."""
    import mlx.core as mx

    prompts = [_SHORT, _MID, _LONG]
    rows: Rows = {0: [], 1: [], 2: []}
    logits = _decode(runner, rows, [0, 1], runner.prefill(prompts[:2]), 1)
    new = runner.extend(prompts[2])
    logits = mx.concatenate([logits, new], axis=0)
    logits = _decode(runner, rows, [0, 1, 2], logits, STEPS - 2)
    _record(rows, [0, 1, 2], logits)
    return prompts, rows


def _merge(runner: Any) -> tuple[list[list[int]], Rows]:
    """Rows prefilled alone (plain KVCache) are merged and decoded jointly."""
    prompts = [_SHORT, _LONG, _MID]
    order = [0, 1, 2]
    rows: Rows = {i: [] for i in order}
    logits = _decode(runner, rows, order, runner.merge(prompts), STEPS - 1)
    _record(rows, order, logits)
    return prompts, rows


_SCENARIOS: dict[str, Callable[[Any], tuple[list[list[int]], Rows]]] = {
    "equal": _joint(_EQUAL),
    "padded": _joint([_SHORT, _MID, _LONG]),
    "padded-reversed": _joint([_LONG, _MID, _SHORT]),
    "filter": _filter,
    "extend": _extend,
    "merge": _merge,
}


def _compare(
    lm: Any, path: str, prompts: list[list[int]], rows: Rows, tolerance: float
) -> dict[str, Any]:
    import mlx.core as mx

    from mlxcompat.drivers.glm4v import run_single

    worst = 0.0
    per_row: dict[str, float] = {}
    token_rows: list[int] = []
    bad_rows: list[int] = []
    non_finite: list[int] = []
    for row, got in rows.items():
        want = run_single(lm, prompts[row], len(got), path)
        delta = max(float(mx.max(mx.abs(g - w)).item()) for g, w in zip(got, want, strict=True))
        same_tokens = [_greedy(g[None])[0] for g in got] == [_greedy(w[None])[0] for w in want]
        if not math.isfinite(delta):  # NaN would compare as "no larger" and hide the row
            non_finite.append(row)
            bad_rows.append(row)
            continue
        per_row[str(row)] = delta
        worst = max(worst, delta)
        if not same_tokens:
            token_rows.append(row)
        if not same_tokens or delta > tolerance:
            bad_rows.append(row)
    return {
        "max_abs_delta": worst,
        "tokens_equal": not token_rows,
        "mismatching_rows": bad_rows,
        "token_mismatch_rows": token_rows,
        "non_finite_rows": non_finite,
        "row_max_abs_delta": per_row,
        "prompt_lengths": [len(p) for p in prompts],
        "steps": {str(r): len(v) for r, v in rows.items()},
        "tolerance": tolerance,
    }


def check_glm4v(
    scenario: str, path: str, subject: str, tolerance: float = 1e-4, seed: int = 0
) -> CheckResult:
    """One GLM4V scenario on one path: batched BatchKVCache logits vs each prompt alone.

    Never raises: an exception becomes verdict "error", SkipCheck becomes "skip".
    """
    mode = f"{scenario}/{path}"

    def body() -> CheckResult:
        if scenario not in _SCENARIOS or path not in GLM4V_PATHS:
            raise ValueError(f"unknown GLM4V scenario/path {scenario!r}/{path!r}")
        from mlxcompat.drivers.glm4v import BatchRunner, call_body_kind
        from mlxcompat.models.glm4v import build_glm4v_language_model

        lm = build_glm4v_language_model(seed)
        prompts, rows = _SCENARIOS[scenario](BatchRunner(lm, path))
        metrics = _compare(lm, path, prompts, rows, tolerance)
        metrics["call_body"] = call_body_kind()
        if not metrics["mismatching_rows"]:
            return CheckResult("glm4v", "pass", mode, "glm4v_moe", subject, metrics)
        delta = metrics["max_abs_delta"]
        detail = (f"rows {metrics['mismatching_rows']} differ from single-sequence decoding "
                  f"(max |Δ logit| {delta:.3g} > {tolerance:g}, NaN/inf in rows "
                  f"{metrics['non_finite_rows']}, or greedy tokens differ)")
        return CheckResult("glm4v", "fail", mode, "glm4v_moe", subject, metrics, detail)

    return guarded("glm4v", mode, "glm4v_moe", subject, body)
