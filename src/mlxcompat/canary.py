"""The canary: mlx-lm's default branch against the newest release cell (`nox -s canary`).

One commit of the upstream branch (resolved once, recorded in the cell JSON and the summary)
with the release cell's mlx where it installs with it (else the newest: `branch_mlx`), the same
subjects (installed as the release cell installs them) and models as the newest pinned mlx-lm
release cell, which runs first in the same venv. Both are graded with the matrix's
expectations, the canary's as the release cell (`graded_as_release`); the canary reports the
rows that are unexpected there and not in the release cell: what the branch would break. It
never gates (CI lets it fail).
Environment: MLXCOMPAT_CANARY_REPO (default mlx-lm's GitHub URL), MLXCOMPAT_CANARY_REF
(default HEAD), MLXCOMPAT_CANARY_OUT (default canary/).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from packaging.version import Version
from pydantic import Field

from mlxcompat.matrix import Cell, Matrix
from mlxcompat.records.base import Record
from mlxcompat.records.cell import CellDoc, InstallRecord, read_cell
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.report import ReportRow

if TYPE_CHECKING:
    import nox

    from mlxcompat.cell_runs import CellRuns


REPO = "https://github.com/ml-explore/mlx-lm"


class Sessions(Protocol):
    """What the canary uses of mlxcompat.nox's Sessions (which registers it)."""

    matrix: Matrix
    matrix_file: Path
    backend: str
    python: str
    run_id: str
    runs: CellRuns

    def install_cell(self, session: nox.Session, cell: Cell, log: Path) -> InstallRecord: ...

    def install(self, session: nox.Session, log: Path, *args: str,
                always: bool = False) -> bool: ...


class Branch(Record):
    """The upstream commit the canary ran: `ref` of `repo` when it was resolved."""

    repo: str
    ref: str = "HEAD"
    commit: str = ""


class CanarySummary(Record):
    """canary/summary.json: what the branch would break, keep broken, or fix."""

    line: str
    branch: Branch
    release_cell: str
    packages: dict[str, str] = Field(default_factory=dict)
    new: list[str] = Field(default_factory=list)
    still: list[str] = Field(default_factory=list)
    fixed: list[str] = Field(default_factory=list)


def newest_release_cell(matrix: Matrix) -> Cell:
    """The newest pinned mlx-lm cell without mlx-vlm: what the branch is compared with."""
    cells = [c for c in matrix.cells if "mlx-lm" in c.pins and "mlx-vlm" not in c.pins]
    if not cells:
        raise ValueError("the matrix has no pinned mlx-lm cell to compare the canary with")
    return max(cells, key=lambda c: Version(c.pins["mlx-lm"]))


def upstream_commit(repo: str, ref: str = "HEAD") -> str:
    """The commit `ref` of `repo` is at now (git ls-remote): the canary tests exactly it."""
    proc = subprocess.run(["git", "ls-remote", repo, ref], capture_output=True, text=True,
                          timeout=120, check=False)
    lines = [line.split() for line in proc.stdout.splitlines() if line.strip()]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"git ls-remote {repo} {ref}: no such ref "
                           f"({proc.stderr.strip()[-300:]})")
    peeled = [w[0] for w in lines if w[1].endswith("^{}")]  # an annotated tag's commit
    return peeled[0] if peeled else lines[0][0]


def graded_as_release(canary: CellDoc, release: CellDoc) -> CellDoc:
    """The canary's document as the release cell's, for grading only: the release's cell name
    and mlx-lm version (the branch runs with the release's mlx where it installs with it).
    Every known difference is bounded by the release it was measured on (`<=0.32.2`, or
    `cell: [mlx-lm-0.32.2]`), so graded as itself (0.32.3.dev1 from the tags, 0.1.dev1
    without them, cell `canary`) the branch broke all of them: 1,525 rows of one run were
    "new" (2,023 at 0.1.dev1), each the release cell's row as it was (2026-12-07, a
    stand-in repository of 0.32.2's sdist: reports/evidence/canary-standin.txt). As the
    release, a row is new when its outcome is one the release's expectations do not allow."""
    graded = canary.model_copy(deep=True)
    graded.cell = release.cell
    if "mlx-lm" in release.env.packages:
        graded.env.packages["mlx-lm"] = release.env.packages["mlx-lm"]
    return graded


def compare(release: CellDoc, canary: CellDoc, matrix: Matrix,
            branch: Branch) -> CanarySummary:
    """Rows unexpected in the canary and not in the release cell (new), unexpected in both
    (still), unexpected only in the release cell (fixed); a release row the canary lacks is
    new as well (fail closed)."""
    from mlxcompat.report.aggregate import aggregate

    def graded(doc: CellDoc) -> dict[tuple[str, ...], ReportRow]:
        return {r.key(): r for r in aggregate([doc], matrix).results}

    old, new = graded(release), graded(graded_as_release(canary, release))

    def brief(r: ReportRow, why: str = "") -> str:
        return f"{r.about.text} {r.subject}: {why or r.outcome.why or r.verdict}"

    bad: dict[str, list[str]] = {"new": [], "still": [], "fixed": []}
    for key, row in new.items():
        if not row.outcome.expected:
            before = old.get(key)
            if before and not before.outcome.expected:
                bad["still"].append(brief(row))
            elif before and row.verdict == "pass":  # an expected failure fixed on the branch
                bad["fixed"].append(brief(row))
            else:
                bad["new"].append(brief(row))
    for key, row in old.items():
        if key not in new:
            bad["new"].append(brief(row, "no row in the canary"))
        elif not row.outcome.expected and new[key].outcome.expected:
            bad["fixed"].append(brief(new[key]))
    packages = canary.env.packages
    mlx, was = packages.get("mlx", "?"), release.env.packages.get("mlx", "?")
    moved = "" if mlx == was else f" (the release cell's {was} would not install with it: " \
        "a difference may be mlx's)"
    line = (f"canary: mlx-lm {packages.get('mlx-lm', '?')} at {branch.commit[:12]} "
            f"({branch.repo}), mlx {mlx}{moved}: {len(bad['new'])} "
            f"unexpected compared with the newest release cell {release.cell} "
            f"({len(bad['still'])} unexpected in both, {len(bad['fixed'])} fixed on the branch; "
            f"graded with the release's expectations)")
    return CanarySummary(line=line, branch=branch, release_cell=release.cell,
                         packages=dict(packages), **bad)


def _run_cell(session: nox.Session, s: Sessions, name: str, cell: Cell, out: Path,
              install: InstallRecord, pins: dict[str, str], subjects: Path) -> CellDoc:
    """Run `cell`'s subjects and models as cell document `name` (no throughput)."""
    from mlxcompat.runplan import plan, selection_parser

    args = selection_parser().parse_args(["--bench", "off"])
    run = plan(s.matrix, cell.id, args, backend=s.backend, out=out / f"{name}.json",
               pins=pins, run_id=s.run_id, install=install, subject_dir=str(subjects))
    run = run.model_copy(update={"cell": name})
    s.runs.run_here(session, name, ["mlxcompat", "--matrix", str(s.matrix_file), "run",
                                    "--cell-run", str(run.write(out / f"{name}.cell-run.json"))],
                    {"HF_HUB_OFFLINE": "1"})  # as a matrix cell: a Ctrl-C gives it time to clean up
    return read_cell(out / f"{name}.json")


def branch_mlx(session: nox.Session, requirement: str, pinned: str, s: Sessions) -> str:
    """The release cell's mlx when the branch installs with it, so the canary differs from the
    release cell in the branch alone: with the newest mlx (0.32.4 against 0.32.2), mlx's own
    drift showed as "new" rows of the stand-in run (dtype-parity mamba bfloat16: |Δ| 0.78 and
    other tokens against the release cell's 0.094). The newest mlx where the branch needs a
    later one (an install dry run says), and the summary says so."""
    from mlxcompat.pypi import newest

    if not pinned:
        return newest("mlx")
    wanted = [requirement, s.matrix.mlx_template(backend=s.backend).format(v=pinned)]
    where = session.virtualenv.location
    probe = (["uv", "pip", "install", "--dry-run", "--python", where, *wanted]
             if session.venv_backend == "uv" else
             [str(Path(where, "bin", "python")), "-m", "pip", "install", "--dry-run", *wanted])
    try:
        ok = subprocess.run(probe, capture_output=True, timeout=600, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        ok = False
    return pinned if ok else newest("mlx")


def run_canary(session: nox.Session, s: Sessions) -> None:

    release = newest_release_cell(s.matrix)
    branch = Branch(repo=os.environ.get("MLXCOMPAT_CANARY_REPO", REPO),
                    ref=os.environ.get("MLXCOMPAT_CANARY_REF", "HEAD"))
    branch.commit = upstream_commit(branch.repo, branch.ref)
    out = Path(os.environ.get("MLXCOMPAT_CANARY_OUT", "canary")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    venv = Path(session.virtualenv.location)
    (venv / "mlxcompat-install.json").unlink(missing_ok=True)  # the venv is swapped below
    log = out / "install.log"
    log.write_text("")
    install = s.install_cell(session, release, log)
    bad = {k: v.error for k, v in install.subjects.items() if not v.ok}
    if not install.ok or bad:
        session.error(f"{release.id}: install failed: {install.error or bad}")
    doc = _run_cell(session, s, release.id, release, out, install,
                    install.resolved or dict(release.pins), venv / "subjects")
    requirement = f"mlx-lm @ git+{branch.repo}@{branch.commit}"
    mlx_version = branch_mlx(session, requirement, release.pins.get("mlx", ""), s)
    mlx = s.matrix.mlx_template(backend=s.backend).format(v=mlx_version)
    s.install(session, log, requirement, mlx, always=True)  # never the release's mlx-lm again
    (venv / "mlxcompat-install.json").unlink(missing_ok=True)
    on_branch = install.model_copy(update={"requirements": [requirement, mlx], "resolved": {},
                                           "reused": False})
    pins = {"mlx-lm": f"{branch.repo}@{branch.commit}", "mlx": mlx_version}
    canary = _run_cell(session, s, "canary", release, out, on_branch, pins, venv / "subjects")
    summary = compare(doc, canary, s.matrix, branch)
    write_json_atomic(out / "summary.json", summary.to_json())
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(f"{summary.line}\n\n" + "".join(f"- new: {r}\n" for r in summary.new[:30]))
    print(summary.line)
    for r in summary.new[:30]:
        print(f"canary: new: {r}")
    if summary.new:
        session.error(summary.line)


def register_canary(s: Sessions) -> None:
    import nox

    @nox.session(python=s.python, default=False, tags=["canary"])
    def canary(session: nox.Session) -> None:
        """mlx-lm's default branch (one recorded commit) with the newest mlx, beside the newest
        release cell: rows unexpected there and not in the release cell fail the session."""
        run_canary(session, s)
