"""The subject's own rows: import, patch status (observed, against the release's need) and
idempotence. Every verdict comes from what the harness observed, never from what the entry
point said about itself; a self-report that disagrees with the observation fails."""

from __future__ import annotations

from typing import Any

from mlxcompat.registry import RoleDecl
from mlxcompat.results import CheckResult
from mlxcompat.spec import SubjectRun


def _not_run(check: str, role: str, run: SubjectRun) -> CheckResult:
    why = (f"subject did not install: {run.install_error}" if run.install_error
           else "the entry point was never applied")
    return CheckResult(check, "error", role, "", run.subject, detail=f"not run: {why}")


def check_import(role: str, run: SubjectRun, row: dict[str, Any] | None) -> CheckResult:
    if row is None:
        return _not_run("import", role, run)
    if not row.get("imported", False):
        return CheckResult("import", "error", role, "", run.subject, detail=row["detail"])
    return CheckResult("import", "pass", role, "", run.subject, detail=row["entry_point"])


def judge(role: RoleDecl, status: str, need: dict[str, Any]) -> tuple[str, str]:
    """Verdict for an observed status, given the clean-process probe's record of the need.

    `need` is {"needed": bool | None, "why": str}; None means no probe speaks to this role
    (a project's own role), so only agreement and errors are judged.
    """
    needed, why = need.get("needed"), need.get("why", "")
    if status == "error":
        return "error", "entry point raised"
    if need.get("unknown"):
        return "error", f"cannot judge: {why}"
    if needed is None or role.forced:
        return "pass", f"{status} ({why or 'no need probe for this role'})"
    if needed:
        if status == "applied":
            return "pass", f"applied where needed ({why})"
        return "fail", f"{status} although the release needs it ({why})"
    if status == "applied":
        return "fail", f"applied although not needed ({why})"
    return "pass", f"{status}; not needed ({why})"


def role_need(role: RoleDecl, capabilities: dict[str, Any]) -> dict[str, Any]:
    """What the clean-process probe says about the capability this role patches."""
    if not role.need:
        return {"needed": None, "why": ""}
    record = capabilities.get(role.need)
    if not isinstance(record, dict) or record.get("needed") is None:
        why = (record or {}).get("why") if isinstance(record, dict) else None
        return {"needed": None, "unknown": True,
                "why": why or capabilities.get("error") or
                f"the clean-process probe recorded nothing for {role.need!r}"}
    return {"needed": record.get("needed"), "why": record.get("why", "")}


def check_patch_status(role: RoleDecl, run: SubjectRun, row: dict[str, Any] | None,
                       capabilities: dict[str, Any]) -> CheckResult:
    if row is None:
        return _not_run("patch-status", role.name, run)
    need = role_need(role, capabilities)
    verdict, detail = judge(role, row["status"], need)
    claim = row.get("claim") or []
    if verdict != "error" and not row.get("agrees", True):
        verdict = "fail"
        detail = f"says {'/'.join(claim)} but observed {row['status']}; {detail}"
    metrics = {"status": row["status"], "claim": claim, "needed": need["needed"],
               "changed": row.get("changed", [])[:20]}
    return CheckResult("patch-status", verdict, role.name, "", run.subject, metrics,  # type: ignore[arg-type]
                       f"{detail}; {row.get('detail', '')}".strip("; "))


def check_idempotence(role: str, run: SubjectRun, row: dict[str, Any] | None) -> CheckResult:
    """A second call changes nothing; `unpatch` (where offered) restores every target by
    identity and a re-apply changes the same targets; a call that raised left nothing
    half-applied."""
    if row is None or "idempotence" not in row:
        if row is not None and not row.get("imported", True):
            return CheckResult("idempotence", "error", role, "", run.subject,
                               detail=row["detail"])
        return _not_run("idempotence", role, run)
    rec = row["idempotence"]
    problems = []
    if rec.get("raised"):
        if rec.get("left_changed"):
            problems.append("raised after changing " + ", ".join(rec["left_changed"][:6])
                            + " (half-applied)")
    else:
        if rec.get("second_call_raised"):
            problems.append(f"second call raised {rec['second_call_raised']}")
        if rec.get("second_call_changed"):
            problems.append("second call changed " + ", ".join(rec["second_call_changed"][:6]))
        if rec.get("unpatch_raised"):
            problems.append(f"unpatch raised {rec['unpatch_raised']}")
        if rec.get("not_restored"):
            problems.append("unpatch left " + ", ".join(rec["not_restored"][:6]))
        if rec.get("reapply_differs"):
            problems.append("re-apply changed other targets: "
                            + ", ".join(rec["reapply_differs"][:6]))
    verdict = "fail" if problems else "pass"
    how = "with unpatch" if rec.get("unpatch") else "no unpatch offered"
    detail = "; ".join(problems) or (
        "nothing half-applied" if rec.get("raised") else f"idempotent ({how})")
    return CheckResult("idempotence", verdict, role, "", run.subject, {"record": rec}, detail)  # type: ignore[arg-type]
