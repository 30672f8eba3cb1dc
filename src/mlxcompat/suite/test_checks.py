"""Every check of the catalog, one test per case: the plugin parametrizes `case` from the
run's spec and `record` writes the row (for a broken subject, an error row instead)."""

from mlxcompat.checks.catalog import CATALOG


def test_check(case, check_context, record):
    record(CATALOG[case.check].run(case, check_context))
