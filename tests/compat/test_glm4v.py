"""GLM4V-MoE language model: batched BatchKVCache logits == each prompt alone."""

import pytest

from mlxcompat.checks.glm4v import GLM4V_PATHS, GLM4V_SCENARIOS, check_glm4v

MODEL = "glm4v_moe"


@pytest.mark.parametrize("path", GLM4V_PATHS)
@pytest.mark.parametrize("scenario", GLM4V_SCENARIOS)
def test_glm4v(scenario, path, subject_name, tolerance, record):
    record(check_glm4v(scenario, path, subject_name, tolerance))
