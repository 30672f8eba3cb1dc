"""The subject itself: did it install, do its entry points import, is each patch applied
exactly where the release needs it, and is each one idempotent and reversible."""

from mlxcompat.checks.patch_status import check_idempotence, check_import, check_patch_status
from mlxcompat.results import CheckResult
from mlxcompat.suite.marks import check


@check("install", runs_when_broken=True)
def test_install(case, mlxcompat_run, record):
    if mlxcompat_run.install_error:
        record(CheckResult("install", "error", "", "", mlxcompat_run.subject,
                           detail=f"subject did not install: {mlxcompat_run.install_error}"))
    else:
        record(CheckResult("install", "pass", "", "", mlxcompat_run.subject, detail="installed"))


@check("import", runs_when_broken=True)
def test_import(case, mlxcompat_run, patch_rows, record):
    record(check_import(case.mode, mlxcompat_run, patch_rows.get(case.mode)))


@check("patch-status", runs_when_broken=True)
def test_patch_status(case, mlxcompat_run, patch_rows, capabilities, registry, record):
    record(check_patch_status(registry.roles[case.mode], mlxcompat_run,
                              patch_rows.get(case.mode), capabilities))


@check("idempotence", runs_when_broken=True)
def test_idempotence(case, mlxcompat_run, patch_rows, record):
    record(check_idempotence(case.mode, mlxcompat_run, patch_rows.get(case.mode)))
