"""Batched == single for every mlx-lm model in every parity mode it supports."""

from mlxcompat.checks.parity import check_parity
from mlxcompat.suite.marks import check


@check("parity")
def test_parity(case, registry, subject_name, tolerance, record):
    record(check_parity(registry.models[case.model], case.mode, subject_name, tolerance))
