"""Patch status: did each entry point of a subject apply exactly where the release needs it?"""

from __future__ import annotations

from typing import Any

from mlxcompat.checks import guarded
from mlxcompat.results import CheckResult, SkipCheck


def _mamba_needed() -> tuple[bool, str]:
    from mlxcompat.drivers.capabilities import probe_lm

    decision, why = probe_lm().ssm_patch_decision()
    return decision == "needed", why


def _glm4v_needed() -> tuple[bool, str]:
    from mlxcompat.drivers.glm4v import glm4v_needs_patch

    return glm4v_needs_patch()


_NEED = {"mamba": _mamba_needed, "mamba-legacy": _mamba_needed, "glm4v": _glm4v_needed}
_FORCED = {"mamba-legacy"}


def judge(role: str, status: str, needed: bool, why: str) -> tuple[str, str]:
    """Verdict for an observed status given whether the release needs the patch."""
    if status == "error":
        return "error", "entry point raised"
    if needed:
        if status == "applied":
            return "pass", f"applied where needed ({why})"
        return "fail", f"{status} although the release needs it ({why})"
    if status == "applied" and role not in _FORCED:
        return "fail", f"applied although not needed ({why})"
    return "pass", f"{status}; not needed ({why})"


def check_patch_status(row: dict[str, Any]) -> CheckResult:
    """Judge one `patches` row of the cell JSON against the installed release's capabilities."""
    role, subject = row["patch"], row["subject"]

    def body() -> CheckResult:
        if row["status"] == "unavailable":
            raise SkipCheck(f"patch module not importable here: {row.get('detail', '')}")
        if role not in _NEED:
            raise SkipCheck(f"no capability rule for patch role {role!r}")
        needed, why = _NEED[role]()
        verdict, detail = judge(role, row["status"], needed, why)
        metrics = {"status": row["status"], "needed": needed}
        return CheckResult("patch-status", verdict, role, "", subject, metrics,  # type: ignore[arg-type]
                           f"{detail}; {row.get('detail', '')}".strip("; "))

    return guarded("patch-status", role, "", subject, body)
