import pytest

from mlxcompat.checks.patch_status import check_idempotence, check_patch_status, judge
from mlxcompat.registry import RoleDecl
from mlxcompat.spec import SubjectRun

MAMBA = RoleDecl("mamba", ("m",), ("parity",), (), need="ssm")
FORCED = RoleDecl("mamba-legacy", ("m",), ("parity",), (), need="ssm", forced=True)
OWN = RoleDecl("gemma", ("m",), ("parity",), ())
RUN = SubjectRun(cell="c", subject="s", out="x")


@pytest.mark.parametrize(
    ("role", "status", "needed", "verdict"),
    [
        (MAMBA, "applied", True, "pass"),
        (MAMBA, "skipped", True, "fail"),
        (MAMBA, "not-applicable", True, "fail"),
        (MAMBA, "applied", False, "fail"),
        (MAMBA, "skipped", False, "pass"),
        (FORCED, "applied", False, "pass"),
        (MAMBA, "error", True, "error"),
        (OWN, "applied", None, "pass"),
    ],
)
def test_judge(role, status, needed, verdict):
    assert judge(role, status, {"needed": needed, "why": "w"})[0] == verdict


def test_a_self_report_that_disagrees_fails():
    row = {"status": "skipped", "claim": ["applied"], "agrees": False, "detail": "changed nothing"}
    result = check_patch_status(MAMBA, RUN, row, {"ssm": {"needed": False, "why": "native"}})
    assert result.verdict == "fail" and "says applied but observed skipped" in result.detail


def test_wrapping_twice_fails_idempotence():
    row = {"status": "applied", "idempotence": {"second_call_changed": ["m:helper"]}}
    assert check_idempotence("mamba", RUN, row).verdict == "fail"


def test_half_applied_fails_idempotence():
    row = {"status": "error", "idempotence": {"raised": True, "left_changed": ["m:helper"]}}
    result = check_idempotence("mamba", RUN, row)
    assert result.verdict == "fail" and "half-applied" in result.detail
