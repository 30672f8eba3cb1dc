"""mlx-vlm language models batched through their own cache kinds vs each prompt alone.

The models of this check (runner `vlm`: mlx-vlm's qwen3_5 and gemma4 text models) are what a
server decodes a VLM's text with; vllm-mlx's `qwen3_5_mllm` / `gemma4_mllm` patches change
their attention. Scenarios are GLM4V's (equal, padded both ways, filter, extend, merge: only
steps the batch computed are compared), through `LanguageModel.__call__`.
"""

from __future__ import annotations

from mlxcompat.checks.compare import Comparison
from mlxcompat.checks.glm4v import GLM4V_SCENARIOS, run_scenario
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

SCENARIOS = GLM4V_SCENARIOS


def run_vlm_scenario(lm: object, scenario: str, tolerance: float) -> Comparison:
    from mlxcompat.drivers.vlm_text import PATH, VlmBatchRunner, run_single

    return run_scenario(lm, scenario, PATH, tolerance, VlmBatchRunner(lm), run_single)


def run_vlm(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    def body() -> ResultRow:
        lm = build_model(ctx.registry.models[case.model], seed)
        found = run_vlm_scenario(lm, case.scenario, ctx.tolerance)
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def vlm_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("vlm", model=m.name, scenario=s)
                              for m in selection.models_of("vlm") for s in SCENARIOS])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"scenario": SCENARIOS}


SPEC = CheckSpec("vlm", ("model", "scenario", "subject"), vlm_cases, run_vlm, _values)
