"""The subject's own rows: install, import, patch status (observed, against the release's
need) and idempotence. Every verdict comes from what the harness observed, never from what
the entry point said about itself; a self-report that disagrees with the observation fails."""

from __future__ import annotations

from collections.abc import Callable

from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, wanted
from mlxcompat.checks.target_families import TargetNeed, family_needs, target_needs
from mlxcompat.records.need import Need
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry, RoleDecl


def _not_run(case: Case, ctx: Context) -> ResultRow:
    why = (f"subject did not install: {ctx.install_error}" if ctx.install_error
           else "the entry point was never applied")
    return case.row(ctx.subject, "error", f"not run: {why}")


def run_install(case: Case, ctx: Context) -> ResultRow:
    if ctx.install_error:
        return case.row(ctx.subject, "error", f"subject did not install: {ctx.install_error}")
    return case.row(ctx.subject, "pass", "installed")


def run_import(case: Case, ctx: Context) -> ResultRow:
    row = ctx.patches.get(case.role)
    if row is None:
        return _not_run(case, ctx)
    if not row.imported:
        return case.row(ctx.subject, "error", row.detail)
    return case.row(ctx.subject, "pass", row.entry_point)


def judge(role: RoleDecl, observed: str, need: Need) -> tuple[str, str]:
    """Verdict for an observed status, given the need probe's record of the need.

    A role without a `need` (a project's own role) is judged on agreement and errors only.
    """
    if observed == "error":
        return "error", "entry point raised"
    if role.need and need.needed is None:
        return "error", f"cannot judge: {need.why}"
    if not role.need or role.forced:
        return "pass", f"{observed} ({need.why or 'no need probe for this role'})"
    if need.needed:
        if observed == "applied":
            return "pass", f"applied where needed ({need.why})"
        return "fail", f"{observed} although the release needs it ({need.why})"
    if observed == "applied":
        return "fail", f"applied although not needed ({need.why})"
    return "pass", f"{observed}; not needed ({need.why})"


def role_need(role: RoleDecl, ctx: Context) -> Need:
    """What the need probe found for the capability this role patches."""
    if not role.need:
        return Need(needed=None)
    return ctx.need().for_capability(role.need)


def _wider(targets: TargetNeed) -> str:
    """The targets replaced where nothing they serve is broken in this cell ('' if none)."""
    if not targets.unneeded:
        return ""
    named = "; ".join(f"{t} (serves {', '.join(keys)}: none broken here)"
                      for t, keys in list(targets.unneeded.items())[:4])
    return f"wider than needed: replaced {named}"


def run_patch_status(case: Case, ctx: Context) -> ResultRow:
    row = ctx.patches.get(case.role)
    if row is None:
        return _not_run(case, ctx)
    role = ctx.registry.roles[case.role]
    need = role_need(role, ctx)
    verdict, detail = judge(role, row.observed, need)
    if verdict != "error" and not row.agrees:
        verdict = "fail"
        detail = f"says {'/'.join(row.claim)} but observed {row.observed}; {detail}"
    record = ctx.need() if role.need else None
    targets = target_needs(row.changed, record) if record else TargetNeed()
    wider = _wider(targets)
    if wider and verdict == "pass" and not role.forced:
        verdict = "fail"
    detail = f"{detail}; {wider}" if wider else detail
    metrics = {"observed": row.observed, "claim": row.claim, "needed": need.needed,
               "changed": row.changed[:20],
               "families": family_needs(record) if record else {},
               "targets_needed": targets.needed, "targets_unneeded": targets.unneeded,
               "targets_unmapped": targets.unmapped[:20],
               "targets_unprobed": targets.unprobed[:20]}
    return case.row(ctx.subject, verdict, f"{detail}; {row.detail}".strip("; "),
                    metrics=metrics)


def idempotence_problems(row: PatchRow) -> list[str]:
    rec = row.idempotence
    assert rec is not None
    wrote = [f"wrote installed files {', '.join(rec.wrote_files[:4])} (they outlive the "
             "process and every unpatch)"] if rec.wrote_files else []
    if rec.raised:
        again = [f"a second call raised again ({rec.second_call_raised[:120]}) and changed "
                 + (", ".join(rec.second_call_changed[:4]) or "nothing more")
                 ] if rec.second_call_raised and rec.left_changed else []
        return [f"raised after changing {', '.join(rec.left_changed[:6])} (half-applied)",
                *again, *wrote] if rec.left_changed else wrote
    problems = wrote
    if rec.second_call_raised:
        problems.append(f"second call raised {rec.second_call_raised}")
    if rec.second_call_changed:
        problems.append("second call changed " + ", ".join(rec.second_call_changed[:6]))
    if rec.unpatch_raised:
        problems.append(f"unpatch raised {rec.unpatch_raised}")
    if rec.not_restored:
        problems.append("unpatch left " + ", ".join(rec.not_restored[:6]))
    if rec.reapply_differs:
        problems.append("re-apply changed other targets: " + ", ".join(rec.reapply_differs[:6]))
    return problems


def run_idempotence(case: Case, ctx: Context) -> ResultRow:
    """A second call changes nothing; `unpatch` (where offered) restores every target by
    identity and a re-apply changes the same targets; a call that raised left nothing
    half-applied."""
    row = ctx.patches.get(case.role)
    if row is not None and not row.imported:
        return case.row(ctx.subject, "error", row.detail + "".join(
            f"; {p}" for p in (idempotence_problems(row) if row.idempotence else [])))
    if row is None or row.idempotence is None:
        return _not_run(case, ctx)
    problems = idempotence_problems(row)
    rec = row.idempotence
    assert rec is not None
    how = "with unpatch" if rec.unpatch_offered else "no unpatch offered"
    detail = "; ".join(problems) or (
        "nothing half-applied" if rec.raised else f"idempotent ({how})")
    return case.row(ctx.subject, "fail" if problems else "pass", detail,
                    metrics={"record": rec.to_json()})


def install_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("install")] if selection.installs else [])


def _role_cases(check: str) -> Callable[[Selection], list[Case]]:
    def cases(selection: Selection) -> list[Case]:
        return wanted(selection, [Case(check, role=role) for role in selection.roles])
    return cases


def _roles(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"role": tuple(registry.roles)}


INSTALL = CheckSpec("install", ("subject",), install_cases, run_install,
                    runs_when_broken=True, always=True, bisectable=False, order=0)
IMPORT = CheckSpec("import", ("role", "subject"), _role_cases("import"), run_import, _roles,
                   runs_when_broken=True, always=True, order=0)
PATCH_STATUS = CheckSpec("patch-status", ("role", "subject"), _role_cases("patch-status"),
                         run_patch_status, _roles, runs_when_broken=True, order=3)
IDEMPOTENCE = CheckSpec("idempotence", ("role", "subject"), _role_cases("idempotence"),
                        run_idempotence, _roles, runs_when_broken=True, order=3)
