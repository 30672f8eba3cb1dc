"""Install one cell's venv: the harness, the cell's releases (or sources), each subject.

Requirements of a subject go into a folder of its own (`--no-deps --target`); local paths are
installed editable, `--no-deps`. A reused venv whose install commands (and the pyproject.toml
of everything installed editable) are unchanged since its last complete install, and whose
mlx / mlx-lm / mlx-vlm files still match their RECORD (a subject may write into them: vMLX
1.6.81 replaces mlx_lm/models/deepseek_v3.py on import), is not installed again. Those files
are copied out of uv's hard-linked cache first, so such a write stays in this venv.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path
from typing import Any

from mlxcompat.installs import harness_requirement, install_key, tampered, unshare_watched
from mlxcompat.matrix import Cell, Matrix
from mlxcompat.matrix_entries import packaged
from mlxcompat.records.cell import InstallRecord, SubjectInstall
from mlxcompat.sharing import folder_reader, plan_sharing
from mlxcompat.source_install import installed


def pip_install(session: Any, log: Path, *args: str) -> None:
    """`pip install` into the session venv (uv when there), output to `log`."""
    with log.open("a") as fh:
        if session.venv_backend == "uv":
            session.run_install("uv", "pip", "install", "--python", session.virtualenv.location,
                                *args, stdout=fh, stderr=subprocess.STDOUT, external=True)
        else:
            session.run_install("python", "-m", "pip", "install", *args, stdout=fh,
                                stderr=subprocess.STDOUT)


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
    record = InstallRecord(backend=backend, harness=harness_requirement(),
                           requirements=requirements, resolved=pins)
    venv = Path(session.virtualenv.location)
    plan = _plan(matrix, cell, record, venv)
    key = install_key(plan, str(session.python))
    marker = venv / "mlxcompat-install.json"
    done = json.loads(marker.read_text()) if marker.exists() else {}
    changed = tampered(venv)
    if done.get("key") == key and not changed and not cell.sources:
        return _reused(record, venv, done["subjects"])
    marker.unlink(missing_ok=True)
    plan[0] = ("", [*_reinstall(session, cell, changed), *plan[0][1]])
    _run_plan(session, plan, record, log)
    copied = unshare_watched(venv)  # before any subject runs: see drivers/installed.py
    record.seconds = round(time.perf_counter() - start, 2)
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    record.log_tail = "\n".join(([f"reinstalled: {', '.join(changed)} differed from their "
                                  "RECORD"] if changed else []) + lines[-25:]
                                 + [f"{copied} mlx / mlx-lm / mlx-vlm files unshared from "
                                    "the installer's cache"])
    for package, source in cell.sources.items():
        record.sources[package] = installed(source, matrix.source_dir(), venv)
        record.resolved[package] = record.sources[package].version
    if record.ok and all(v.ok for v in record.subjects.values()):
        marker.write_text(json.dumps({"key": key, "subjects": list(record.subjects)}))
    return record


def _reused(record: InstallRecord, venv: Path, subjects: list[str]) -> InstallRecord:
    unshare_watched(venv)
    record.subjects = {n: SubjectInstall(ok=True) for n in subjects}
    record.seconds, record.reused = 0.0, True
    record.log_tail = "install inputs unchanged since the last install: skipped"
    return record


def _reinstall(session: Any, cell: Cell, changed: list[str]) -> list[str]:
    """Installer flags that reinstall what a subject wrote into (its files no longer match
    their RECORD) and a local source folder (its version need not move when its files do)."""
    again = [p for p in ("mlx-lm", "mlx-vlm", "mlx") if changed and any(
        c.startswith(p.replace("-", "_") + "/") for c in changed)]
    again += [p for p, s in cell.sources.items() if s.path]
    if not again:
        return []
    if session.venv_backend != "uv":
        return ["--force-reinstall"]
    return [f for p in again for f in ("--reinstall-package", p)]


def _run_plan(session: Any, plan: list[tuple[str, list[str]]], record: InstallRecord,
              log: Path) -> None:
    """The harness and releases first (a failure there stops the cell), then each subject
    (a failure is that subject's)."""
    for name, args in plan:
        if not record.ok:
            break
        try:
            pip_install(session, log, *args)
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


def sharing(matrix: Matrix, cell: Cell, record: InstallRecord, venv: Path) -> dict[str, str]:
    """Which installed family members share a run (mlxcompat.sharing)."""
    def reader(spec: Any) -> Any:
        ok = record.subjects.get(spec.name)
        folder = venv / "subjects" / spec.name
        return folder_reader(folder) if ok is not None and ok.ok and folder.is_dir() else None

    return plan_sharing((matrix.subjects[s] for s in cell.subjects), reader)
