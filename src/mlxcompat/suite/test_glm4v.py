"""GLM4V-MoE language model: batched BatchKVCache logits == each prompt alone."""

from mlxcompat.checks.glm4v import check_glm4v
from mlxcompat.suite.marks import check


@check("glm4v")
def test_glm4v(case, registry, subject_name, tolerance, record):
    scenario, path = case.mode.split("/")
    record(check_glm4v(registry.models[case.model], scenario, path, subject_name, tolerance))
