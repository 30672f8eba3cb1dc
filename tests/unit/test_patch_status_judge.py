import pytest

from mlxcompat.checks.patch_status import judge


@pytest.mark.parametrize(
    ("role", "status", "needed", "verdict"),
    [
        ("mamba", "applied", True, "pass"),
        ("mamba", "skipped", True, "fail"),
        ("mamba", "not-applicable", True, "fail"),
        ("mamba", "applied", False, "fail"),
        ("mamba", "skipped", False, "pass"),
        ("mamba", "not-applicable", False, "pass"),
        ("mamba-legacy", "applied", False, "pass"),
        ("glm4v", "error", True, "error"),
    ],
)
def test_judge(role, status, needed, verdict):
    assert judge(role, status, needed, "why")[0] == verdict
