import pytest

from mlxcompat.checks.patch_status import judge, run_idempotence, run_patch_status
from mlxcompat.checks.spec import Case, Context
from mlxcompat.records.need import Need, NeedRecord
from mlxcompat.records.patches import Idempotence, PatchRow
from mlxcompat.registry import Registry, RoleDecl

MAMBA = RoleDecl("mamba", ("m",), ("parity",), (), need="ssm")
FORCED = RoleDecl("mamba-legacy", ("m",), ("parity",), (), need="ssm", forced=True)
OWN = RoleDecl("gemma", ("m",), ("parity",), ())
REGISTRY = Registry({}, {r.name: r for r in (MAMBA, FORCED, OWN)})


def _context(row: PatchRow, need: NeedRecord | None = None) -> Context:
    return Context("s", REGISTRY, 1e-4, patches={row.role: row},
                   need=lambda: need or NeedRecord())


@pytest.mark.parametrize(
    ("role", "observed", "needed", "verdict"),
    [
        (MAMBA, "applied", True, "pass"),
        (MAMBA, "skipped", True, "fail"),
        (MAMBA, "not-applicable", True, "fail"),
        (MAMBA, "applied", False, "fail"),
        (MAMBA, "skipped", False, "pass"),
        (MAMBA, "applied", None, "error"),
        (FORCED, "applied", False, "pass"),
        (MAMBA, "error", True, "error"),
        (OWN, "applied", None, "pass"),
    ],
)
def test_judge(role, observed, needed, verdict):
    assert judge(role, observed, Need(needed=needed, why="w"))[0] == verdict


def test_a_self_report_that_disagrees_fails():
    row = PatchRow(subject="s", role="mamba", entry_point="m:f", observed="skipped",
                   claim=["applied"], agrees=False, detail="changed nothing")
    need = NeedRecord(needs={"ssm": Need(needed=False, why="native")})
    result = run_patch_status(Case("patch-status", role="mamba"), _context(row, need))
    assert result.verdict == "fail" and "says applied but observed skipped" in result.detail


def test_no_need_record_for_a_needed_role_cannot_be_judged():
    row = PatchRow(subject="s", role="mamba", entry_point="m:f", observed="applied")
    result = run_patch_status(Case("patch-status", role="mamba"), _context(row))
    assert result.verdict == "error" and "cannot judge" in result.detail


def test_wrapping_twice_fails_idempotence():
    row = PatchRow(subject="s", role="mamba", entry_point="m:f", observed="applied",
                   idempotence=Idempotence(second_call_changed=["m:helper"]))
    assert run_idempotence(Case("idempotence", role="mamba"), _context(row)).verdict == "fail"


def test_half_applied_fails_idempotence():
    row = PatchRow(subject="s", role="mamba", entry_point="m:f", observed="error",
                   idempotence=Idempotence(raised=True, left_changed=["m:helper"]))
    result = run_idempotence(Case("idempotence", role="mamba"), _context(row))
    assert result.verdict == "fail" and "half-applied" in result.detail
