"""Extract every row, merge back: decoding continues as from the unsplit batch."""

from mlxcompat.checks.cache_contract import check_cache_contract
from mlxcompat.suite.marks import check


@check("cache-contract")
def test_cache_contract(case, registry, subject_name, tolerance, record):
    record(check_cache_contract(registry.models[case.model], subject_name, tolerance))
