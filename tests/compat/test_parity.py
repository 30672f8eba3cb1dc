"""Batched == single for every mlx-lm model in every parity mode."""

import pytest

from mlxcompat.checks.parity import MODES, check_parity
from mlxcompat.models import LM_MODELS


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("model", LM_MODELS)
def test_parity(model, mode, subject_name, tolerance, record):
    record(check_parity(model, mode, subject_name, tolerance))
