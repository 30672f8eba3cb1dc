"""GLM4V language-model parity: batched BatchKVCache decoding vs each prompt alone.

Every scenario ends with, for each prompt, the list of last-position logits the batch produced
for it; the oracle is the same prompt through plain KVCaches in the same process and path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlxcompat.checks import guarded
from mlxcompat.checks.compare import compare_rows
from mlxcompat.models import build_model
from mlxcompat.registry import GLM4V_PATHS, GLM4V_SCENARIOS, ModelDecl
from mlxcompat.results import CheckResult

__all__ = ["GLM4V_PATHS", "GLM4V_SCENARIOS", "check_glm4v"]

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
    """Rows prefilled alone (plain KVCache) are merged and decoded jointly.

    The first logits come from each row's own prefill, not from the batch, so they are fed
    forward but not recorded: only steps computed through the merged batch are compared.
    """
    prompts = [_SHORT, _LONG, _MID]
    order = [0, 1, 2]
    rows: Rows = {i: [] for i in order}
    logits = runner.step(_greedy(runner.merge(prompts)))
    logits = _decode(runner, rows, order, logits, STEPS - 1)
    _record(rows, order, logits)
    return prompts, rows


FIRST_STEP = {"merge": 1}  # index of the first recorded step in a row's own timeline


_SCENARIOS: dict[str, Callable[[Any], tuple[list[list[int]], Rows]]] = {
    "equal": _joint(_EQUAL),
    "padded": _joint([_SHORT, _MID, _LONG]),
    "padded-reversed": _joint([_LONG, _MID, _SHORT]),
    "filter": _filter,
    "extend": _extend,
    "merge": _merge,
}


def _compare(lm: Any, path: str, prompts: list[list[int]], rows: Rows, first: int,
             tolerance: float) -> tuple[str, dict[str, Any], str]:
    """Each row's recorded logits against the same steps of the prompt run alone."""
    import numpy as np

    from mlxcompat.drivers.glm4v import run_single

    batched, reference, b_tokens, r_tokens = [], [], [], []
    for row, got in sorted(rows.items()):
        want = run_single(lm, prompts[row], first + len(got), path)[first:]
        batched.append([np.array(g) for g in got])
        reference.append([np.array(w) for w in want])
        b_tokens.append([_greedy(g[None])[0] for g in got])
        r_tokens.append([_greedy(w[None])[0] for w in want])
    verdict, metrics, detail = compare_rows(batched, reference, b_tokens, r_tokens, tolerance)
    metrics["prompt_lengths"] = [len(p) for p in prompts]
    metrics["first_step"] = first
    return verdict, metrics, detail


def check_glm4v(model: ModelDecl, scenario: str, path: str, subject: str,
                tolerance: float = 1e-4, seed: int = 0) -> CheckResult:
    """One GLM4V scenario on one path: batched BatchKVCache logits vs each prompt alone.

    Never raises: an exception becomes verdict "error", SkipCheck becomes "skip".
    """
    mode = f"{scenario}/{path}"

    def body() -> CheckResult:
        if scenario not in _SCENARIOS or path not in GLM4V_PATHS:
            raise ValueError(f"unknown GLM4V scenario/path {scenario!r}/{path!r}")
        from mlxcompat.drivers.glm4v import BatchRunner, call_body_kind

        lm = build_model(model, seed)
        prompts, rows = _SCENARIOS[scenario](BatchRunner(lm, path))
        verdict, metrics, detail = _compare(lm, path, prompts, rows,
                                            FIRST_STEP.get(scenario, 0), tolerance)
        metrics["call_body"] = call_body_kind()
        return CheckResult("glm4v", verdict, mode, model.name, subject, metrics, detail)  # type: ignore[arg-type]

    return guarded("glm4v", mode, model.name, subject, body)
