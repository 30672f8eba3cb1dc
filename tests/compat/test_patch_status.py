"""Each entry point of the subject applied exactly where the installed release needs it."""

from mlxcompat.checks.patch_status import check_patch_status


def test_patch_status(patch_row, record):
    record(check_patch_status(patch_row))
