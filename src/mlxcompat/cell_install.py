"""Install one cell's venv: the harness, the cell's releases (or sources), each subject.

Requirements of a subject go into a folder of its own (`--no-deps --target`); local paths are
installed editable, `--no-deps`. A cell's package from a local folder installs from a clean
copy of it (`source_install.clean_copy`). A reused venv whose install commands (and the
pyproject.toml of everything installed editable) are unchanged since its last complete
install, and whose mlx / mlx-lm / mlx-vlm files still match their RECORD, is not installed
again. Those files are copied out of uv's hard-linked cache first, so a subject's write
stays in this venv.

A subject may write into them (vMLX 1.6.81 replaces mlx_lm/models/deepseek_v3.py on import
and leaves a backup beside it): the next install of the venv puts them back, under nox's
`--no-install` (`-R`) too, since a cell's rows must come from the releases it pins, then
checks them again; a venv still unlike its RECORDs fails the cell. A venv whose install
inputs changed, or a cell built from source (installed on every run), fails the cell when
nox skips installing (`--no-install`), rather than running what an older install left there.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from mlxcompat.drivers.installed import ADDED
from mlxcompat.installs import (
    harness_requirement,
    install_key,
    remove_added_files,
    tampered,
    unshare_watched,
)
from mlxcompat.matrix import Cell, Matrix
from mlxcompat.matrix_entries import packaged
from mlxcompat.records.cell import InstallRecord, SubjectInstall
from mlxcompat.sharing import folder_reader, plan_sharing
from mlxcompat.source_install import clean_copy, installed


def pip_install(session: Any, log: Path, *args: str, always: bool = False) -> bool:
    """`pip install` into the session venv (uv when there), output to `log`. False when nox
    skipped it (`--no-install` on a reused venv), unless `always`: then it runs regardless."""
    runners = [session.run_install, *([session.run] if always else [])]
    with log.open("a") as fh:
        for run in runners:
            if session.venv_backend == "uv":
                ran = run("uv", "pip", "install", "--python", session.virtualenv.location,
                          *args, stdout=fh, stderr=subprocess.STDOUT, external=True)
            else:
                ran = run("python", "-m", "pip", "install", *args, stdout=fh,
                          stderr=subprocess.STDOUT)
            if ran is not None:
                return True
    return False


def _plan(matrix: Matrix, cell: Cell, record: InstallRecord, venv: Path
          ) -> list[tuple[str, list[str]]]:
    plan: list[tuple[str, list[str]]] = [("", [*record.harness, *record.requirements])]
    for name in cell.subjects:
        spec = matrix.subjects[name]
        if spec.requirements:
            plan.append((name, ["--no-deps", "--target", str(venv / "subjects" / name),
                                *spec.requirements]))
        for target in spec.folders(matrix.source_dir()):
            if packaged(target):  # else it runs from where it is (workers.subject_env)
                plan.append((name, ["--no-deps", "-e", str(target)]))
    return plan


def install_cell(session: Any, matrix: Matrix, cell: Cell, requirements: list[str],
                 pins: dict[str, str], backend: str, log: Path) -> InstallRecord:
    """Install the cell; the record says what, how long, and what each subject got."""
    start = time.perf_counter()
    venv = Path(session.virtualenv.location)
    base = matrix.source_dir()
    try:
        copies = {s.requirement(base): str(clean_copy(s, base, venv))
                  for s in cell.sources.values() if s.path}
    except OSError as exc:  # the folder is gone or unreadable: the cell cannot be installed
        return InstallRecord(backend=backend, harness=harness_requirement(), ok=False,
                             requirements=requirements, resolved=pins, seconds=0.0,
                             error=f"cannot copy the cell's source folder: {exc}")
    record = InstallRecord(backend=backend, harness=harness_requirement(),
                           requirements=[copies.get(r, r) for r in requirements], resolved=pins)
    plan = _plan(matrix, cell, record, venv)
    key = install_key(plan, str(session.python))
    marker = venv / "mlxcompat-install.json"
    done = json.loads(marker.read_text()) if marker.exists() else {}
    changed = tampered(venv)
    repaired = _repair(session, venv, changed, record, log) if changed else []
    if done.get("key") == key and not cell.sources:
        _reused(record, venv, done["subjects"])
    else:
        marker.unlink(missing_ok=True)
        plan[0] = ("", [*_reinstall(session, cell), *plan[0][1]])
        if not _run_plan(session, plan, record, log) and record.ok:
            why = ("this cell builds from source, installed on every run," if cell.sources
                   else "this venv's install inputs changed since its last install")
            record.ok, record.error = False, (
                f"{why} and nox skipped installing (--no-install / -R): run it without -R")
        copied = unshare_watched(venv)  # before any subject runs: see drivers/installed.py
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        record.log_tail = "\n".join([*lines[-25:], f"{copied} mlx / mlx-lm / mlx-vlm files "
                                      "unshared from the installer's cache"])
        for package, source in cell.sources.items():
            record.sources[package] = installed(source, base, venv)
            record.resolved[package] = record.sources[package].version
        if record.ok and all(v.ok for v in record.subjects.values()):
            marker.write_text(json.dumps({"key": key, "subjects": list(record.subjects)}))
    record.log_tail = "\n".join([*repaired, record.log_tail])
    left = tampered(venv) if record.ok else []
    if left:
        record.ok, record.error = False, (
            f"{', '.join(left[:4])} still differ from their RECORD after the reinstall: the "
            "cell would not run the releases it pins")
    record.seconds = round(time.perf_counter() - start, 2)
    return record


def _reused(record: InstallRecord, venv: Path, subjects: list[str]) -> None:
    unshare_watched(venv)
    record.subjects = {n: SubjectInstall(ok=True) for n in subjects}
    record.reused = True
    record.log_tail = "install inputs unchanged since the last install: skipped"


def _repair(session: Any, venv: Path, changed: list[str], record: InstallRecord,
            log: Path) -> list[str]:
    """Put back what a subject wrote into mlx / mlx-lm / mlx-vlm: delete the files it added,
    reinstall the packages whose files it changed (even under --no-install). Returns the
    lines that say so in the install record."""
    added = remove_added_files(venv, changed)
    again = [p for p in ("mlx-lm", "mlx-vlm", "mlx") if any(
        c.startswith(p.replace("-", "_") + "/") and not c.endswith(ADDED) for c in changed)]
    lines = [f"differed from their RECORD: {', '.join(changed)}"]
    if added:
        lines.append(f"deleted (no RECORD lists them): {', '.join(added)}")
    if again:
        try:
            pip_install(session, log, *_reinstall_flags(session, again), *record.harness,
                        *record.requirements, always=True)
            lines.append(f"reinstalled: {', '.join(again)}")
        except Exception as exc:  # nox.command.CommandFailed, or the installer missing
            record.ok, record.error = False, f"reinstalling {', '.join(again)} failed: {exc}"
    return lines


def _reinstall(session: Any, cell: Cell) -> list[str]:
    """Installer flags that reinstall a local source folder (its version need not move when
    its files do)."""
    again = [p for p, s in cell.sources.items() if s.path]
    return _reinstall_flags(session, again) if again else []


def _reinstall_flags(session: Any, packages: list[str]) -> list[str]:
    if session.venv_backend != "uv":
        return ["--force-reinstall"]
    return [f for p in packages for f in ("--reinstall-package", p)]


def _run_plan(session: Any, plan: list[tuple[str, list[str]]], record: InstallRecord,
              log: Path) -> bool:
    """The harness and releases first (a failure there stops the cell), then each subject
    (a failure is that subject's). False when nox skipped a step (--no-install)."""
    ran = True
    for name, args in plan:
        if not record.ok:
            break
        try:
            ran = pip_install(session, log, *args) and ran
            if name:
                record.subjects[name] = SubjectInstall(ok=True)
        except Exception as exc:  # nox.command.CommandFailed, or the installer missing
            tail = [ln.strip() for ln in log.read_text(errors="replace").splitlines()
                    if ln.strip()][-3:] if log.exists() else []
            why = f"{exc}: {' | '.join(tail)}" if tail else str(exc)
            if not name:
                record.ok, record.error = False, why
            else:
                record.subjects[name] = SubjectInstall(ok=False, error=f"failed: {why}")
    return ran


def sharing(matrix: Matrix, cell: Cell, record: InstallRecord, venv: Path) -> dict[str, str]:
    """Which installed family members share a run (mlxcompat.sharing)."""
    def reader(spec: Any) -> Any:
        ok = record.subjects.get(spec.name)
        folder = venv / "subjects" / spec.name
        return folder_reader(folder) if ok is not None and ok.ok and folder.is_dir() else None

    return plan_sharing((matrix.subjects[s] for s in cell.subjects), reader)
