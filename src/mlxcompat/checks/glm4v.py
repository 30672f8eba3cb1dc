"""GLM4V language-model parity: batched BatchKVCache decoding vs each prompt alone.

Every scenario ends with, for each prompt, the list of last-position logits the batch produced
for it; the oracle is the same prompt through plain KVCaches in the same process and path.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mlxcompat.checks.compare import Comparison, compare_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

__all__ = ["GLM4V_IMAGE_SCENARIOS", "GLM4V_PATHS", "GLM4V_SCENARIOS", "SPEC", "run_glm4v"]

GLM4V_SCENARIOS: tuple[str, ...] = ("equal", "padded", "padded-reversed", "filter", "extend",
                                     "merge")
# Rows with an image (3-D rope positions, a rope delta of their own) beside text rows: in one
# padded prefill, and admitted into a running text batch. The outer LanguageModel computes
# the positions itself; the inner GLM4VModel is handed the ones its `get_rope_index` gives.
# `text-masked`: text rows only, through the same media path (the mask and per-row rope
# deltas a batching caller keeps for image rows), so a defect there is not taken for an
# image's; outer path only, where the model computes the positions (on the inner path they
# would be the harness's own, from the same helper, and repeat the outer row).
GLM4V_IMAGE_SCENARIOS: tuple[str, ...] = ("image-mixed", "image-extend", "text-masked")
GLM4V_PATHS: tuple[str, ...] = ("inner", "outer")  # GLM4VModel, LanguageModel
_SHORT, _MID, _LONG = [5, 17, 42], [9, 3, 77, 21, 64], [11, 99, 4, 58, 30, 120, 7, 66]
_EQUAL = [[12, 40, 7, 91, 33], [88, 2, 56, 19, 70]]
STEPS = 4  # logits per row: the prefill plus three greedy decode steps

Rows = dict[int, list[Any]]
Grids = list[tuple[int, ...] | None]


def _greedy(logits: Any) -> list[int]:
    import mlx.core as mx

    from mlxcompat.drivers.modules import host_ints

    return host_ints(mx.argmax(logits, axis=-1))


def _record(rows: Rows, order: list[int], logits: Any) -> None:
    """File each batch row's logits under the prompt index it belongs to."""
    for i, row in enumerate(order):
        rows[row].append(logits[i])


def _decode(runner: Any, rows: Rows, order: list[int], logits: Any, steps: int,
            step: Callable[[list[int]], Any] | None = None) -> Any:
    """`steps` times: record the current logits, then feed each row its greedy token."""
    for _ in range(steps):
        _record(rows, order, logits)
        logits = (step or runner.step)(_greedy(logits))
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


def _image_row() -> list[int]:
    from mlxcompat.drivers.glm4v import image_prompt

    return image_prompt([11, 99, 4], [58, 30, 7])


def _media_joint(prompts: list[list[int]], grids: Grids
                 ) -> Callable[[Any], tuple[list[list[int]], Rows, Grids]]:
    def run(runner: Any) -> tuple[list[list[int]], Rows, Grids]:
        order = list(range(len(prompts)))
        rows: Rows = {i: [] for i in order}
        logits = _decode(runner, rows, order, runner.prefill_media(prompts, grids),
                         STEPS - 1, runner.step_media)
        _record(rows, order, logits)
        return prompts, rows, grids

    return run


def _image_mixed(runner: Any) -> tuple[list[list[int]], Rows, Grids]:
    """An image row between two text rows of other lengths, prefilled and decoded jointly."""
    from mlxcompat.drivers.glm4v import IMAGE_GRID

    return _media_joint([_SHORT, _image_row(), _MID], [None, IMAGE_GRID, None])(runner)


def _image_extend(runner: Any) -> tuple[list[list[int]], Rows, Grids]:
    """An image row joins a running batch of two text rows of one length (nothing padded,
    so only the admission is tested) after one joint step, its own rope delta appended to
    theirs; all rows then decode together."""
    import mlx.core as mx

    from mlxcompat.drivers.glm4v import IMAGE_GRID

    prompts = [*_EQUAL, _image_row()]
    grids: Grids = [None, None, IMAGE_GRID]
    rows: Rows = {0: [], 1: [], 2: []}
    logits = _decode(runner, rows, [0, 1], runner.prefill_media(prompts[:2], grids[:2]), 1,
                     runner.step_media)
    logits = mx.concatenate([logits, runner.extend_media(prompts[2], grids[2])], axis=0)
    logits = _decode(runner, rows, [0, 1, 2], logits, STEPS - 2, runner.step_media)
    _record(rows, [0, 1, 2], logits)
    return prompts, rows, grids


FIRST_STEP = {"merge": 1}  # index of the first recorded step in a row's own timeline


_SCENARIOS: dict[str, Callable[[Any], tuple[list[list[int]], Rows]]] = {
    "equal": _joint(_EQUAL),
    "padded": _joint([_SHORT, _MID, _LONG]),
    "padded-reversed": _joint([_LONG, _MID, _SHORT]),
    "filter": _filter,
    "extend": _extend,
    "merge": _merge,
}
_IMAGE_SCENARIOS: dict[str, Callable[[Any], tuple[list[list[int]], Rows, Grids]]] = {
    "image-mixed": _image_mixed,
    "image-extend": _image_extend,
    "text-masked": _media_joint([_SHORT, _MID, _LONG], [None, None, None]),
}


def compare_scenario(lm: Any, path: str, prompts: list[list[int]], rows: Rows, first: int,
                     tolerance: float, single: Callable[..., list[Any]] | None = None,
                     grids: Grids | None = None) -> Comparison:
    """Each row's recorded logits against the same steps of the prompt run alone (`single`:
    the oracle, GLM4V's plain-KVCache run by default; an image row alone with its grid)."""
    import numpy as np

    from mlxcompat.drivers.glm4v import run_single

    run_single = single or run_single
    batched, reference, b_tokens, r_tokens = [], [], [], []
    for row, got in sorted(rows.items()):
        grid = grids[row] if grids else None
        media = {"grid": grid} if grid else {}
        want = run_single(lm, prompts[row], first + len(got), path, **media)[first:]
        batched.append([np.array(g) for g in got])
        reference.append([np.array(w) for w in want])
        b_tokens.append([_greedy(g[None])[0] for g in got])
        r_tokens.append([_greedy(w[None])[0] for w in want])
    found = compare_rows(batched, reference, b_tokens, r_tokens, tolerance)
    found.metrics["prompt_lengths"] = [len(p) for p in prompts]
    found.metrics["first_step"] = first
    if grids and any(grids):
        found.metrics["image_rows"] = [i for i, g in enumerate(grids) if g]
    return found


def run_scenario(lm: Any, scenario: str, path: str, tolerance: float, runner: Any = None,
                 single: Callable[..., list[Any]] | None = None) -> Comparison:
    """One scenario on one path of a built language model, batched vs each alone (`runner`
    and `single`: another model's driver, e.g. drivers/vlm_text.py; GLM4V's by default)."""
    from mlxcompat.drivers.glm4v import BatchRunner

    if scenario in _IMAGE_SCENARIOS and path in GLM4V_PATHS and runner is None:
        prompts, rows, grids = _IMAGE_SCENARIOS[scenario](BatchRunner(lm, path))
        return compare_scenario(lm, path, prompts, rows, 0, tolerance, grids=grids)
    if scenario not in _SCENARIOS or path not in GLM4V_PATHS:
        raise ValueError(f"unknown GLM4V scenario/path {scenario!r}/{path!r}")
    prompts, rows = _SCENARIOS[scenario](runner or BatchRunner(lm, path))
    return compare_scenario(lm, path, prompts, rows, FIRST_STEP.get(scenario, 0), tolerance,
                            single)


def run_glm4v(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    """One GLM4V scenario on one path: batched BatchKVCache logits vs each prompt alone."""

    def body() -> ResultRow:
        from mlxcompat.drivers.glm4v import call_body_kind

        lm = build_model(ctx.registry.models[case.model], seed)
        found = run_scenario(lm, case.scenario, case.path, ctx.tolerance)
        found.metrics["call_body"] = call_body_kind()
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def glm4v_cases(selection: Selection) -> list[Case]:
    pairs = [(s, p) for s in GLM4V_SCENARIOS + GLM4V_IMAGE_SCENARIOS for p in GLM4V_PATHS
             if (s, p) != ("text-masked", "inner")]
    return wanted(selection, [Case("glm4v", model=m.name, scenario=s, path=p)
                              for m in selection.models_of("glm4v") for s, p in pairs])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"scenario": GLM4V_SCENARIOS + GLM4V_IMAGE_SCENARIOS, "path": GLM4V_PATHS}


SPEC = CheckSpec("glm4v", ("model", "scenario", "path", "subject"), glm4v_cases, run_glm4v,
                 _values)
