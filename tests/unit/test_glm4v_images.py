"""GLM4V rows with an image: the prompt the check builds, the rope delta the model gives it,
and the two paths (the outer model's own positions, the inner model handed them) agreeing.
Runs against the installed mlx-vlm (the check itself decides pass or fail per release)."""

from __future__ import annotations

import pytest

pytest.importorskip("mlx_vlm")

from mlxcompat.checks.glm4v import GLM4V_IMAGE_SCENARIOS, run_scenario
from mlxcompat.drivers.glm4v import IMAGE_GRID, image_prompt
from mlxcompat.errors import SkipCheck
from mlxcompat.models.glm4v import MEDIA_TOKENS, build_glm4v_language_model


@pytest.fixture(scope="module")
def lm():
    try:
        return build_glm4v_language_model(0)
    except SkipCheck as exc:
        pytest.skip(str(exc))


def test_an_image_takes_its_merged_grid_in_tokens_and_fewer_positions(lm) -> None:
    import mlx.core as mx

    prompt = image_prompt([11, 99, 4], [58, 30, 7])
    assert prompt.count(MEDIA_TOKENS["image_token_id"]) == 12  # 1 x (8/2) x (6/2)
    _, delta = lm.get_rope_index(mx.array([prompt]), mx.array([IMAGE_GRID]), None, None)
    assert delta.size == 1 and int(delta.reshape(-1)[0]) == -8  # 12 tokens on 4 positions


@pytest.mark.parametrize("scenario", [s for s in GLM4V_IMAGE_SCENARIOS if s != "text-masked"])
def test_both_paths_see_the_same_rows(lm, scenario: str) -> None:
    try:
        inner = run_scenario(lm, scenario, "inner", 1e-4)
        outer = run_scenario(lm, scenario, "outer", 1e-4)
    except RuntimeError as exc:  # a release that keeps one rope delta per batch
        assert "one delta per batch" in str(exc)
        return
    assert inner.verdict == outer.verdict, (inner.detail, outer.detail)
    assert inner.delta == pytest.approx(outer.delta, abs=1e-5)
    assert inner.tokens_equal == outer.tokens_equal


def test_the_need_probe_records_every_image_scenario_the_check_runs() -> None:
    """Its findings name each image row kind on its paths, judged by the same comparison
    the glm4v check makes (so on the installed release they agree with `none`'s rows)."""
    from mlxcompat.checks.glm4v import glm4v_cases
    from mlxcompat.checks.need import glm4v
    from mlxcompat.checks.spec import Selection
    from mlxcompat.registry import build_registry

    need = glm4v()
    if not need.findings:
        pytest.skip(need.why)
    cases = glm4v_cases(Selection("none", build_registry(), models=("glm4v_moe",)))
    images = {f"{c.scenario}/{c.path}" for c in cases if c.scenario in GLM4V_IMAGE_SCENARIOS}
    assert images and images <= set(need.findings)
    lm = build_glm4v_language_model(0)
    for key in sorted(images):
        scenario, _, path = key.partition("/")
        try:
            verdict = run_scenario(lm, scenario, path, 1e-4).verdict
        except RuntimeError:
            verdict = "error"
        assert need.findings[key].startswith("correct") == (verdict == "pass"), key
