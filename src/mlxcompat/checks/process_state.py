"""`process-state`: an entry point leaves the process as it found it beyond its targets.

Read off what `subjects.apply_entry_point` observed around the entry point's import and
first call (`drivers/process_state.py`): mlx's random key, the default device and stream,
the logging configuration and os.environ must be unchanged; the modules it imported, and what
it changed in mlx, mlx_lm and mlx_vlm outside its role's targets (`footprint`: a process-wide
shim of an mlx.core function, say), are recorded beside the verdict. A server that seeds its
sampling before applying a patch keeps its seed only if this passes.
"""

from __future__ import annotations

from mlxcompat.checks.patch_status import _not_run, _role_cases, _roles
from mlxcompat.checks.spec import Case, CheckSpec, Context
from mlxcompat.records.rows import ResultRow


def run_process_state(case: Case, ctx: Context) -> ResultRow:
    row = ctx.patches.get(case.role)
    if row is None:
        return _not_run(case, ctx)
    if row.process is None:
        return case.row(ctx.subject, "error", "process state was not observed")
    state = row.process
    changes = state.changes()
    metrics = {"record": state.to_json()}
    imported = f"imported {state.modules} modules ({', '.join(state.imported[:8]) or 'none'})"
    if state.beyond_targets:
        imported += ("; recorded, outside its role's targets: "
                     + ", ".join(state.beyond_targets[:6]))
    if changes:
        return case.row(ctx.subject, "fail", "changed " + "; ".join(changes[:6])
                        + f"; {imported}", metrics=metrics)
    return case.row(ctx.subject, "pass", "left mlx's random key, default device and stream, "
                    f"logging and os.environ as they were; {imported}", metrics=metrics)


SPEC = CheckSpec("process-state", ("role", "subject"), _role_cases("process-state"),
                 run_process_state, _roles, runs_when_broken=True, order=3)
