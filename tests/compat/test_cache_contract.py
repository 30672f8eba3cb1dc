"""Extract every row, merge back: decoding continues as from the unsplit batch."""

import pytest

from mlxcompat.checks.cache_contract import check_cache_contract
from mlxcompat.models import LM_MODELS


@pytest.mark.parametrize("model", LM_MODELS)
def test_cache_contract(model, subject_name, tolerance, record):
    record(check_cache_contract(model, subject_name, tolerance))
