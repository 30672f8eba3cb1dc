"""The canary: mlx-lm's default branch against the newest release cell (`nox -s canary`).

One commit of the upstream branch (resolved once, recorded in the cell JSON and the summary)
with the newest mlx, the same subjects (installed as the release cell installs them) and
models as the newest pinned mlx-lm release cell, which runs first in the same venv. Both are
graded with the matrix's expectations; the canary reports the rows that are unexpected there
and not in the release cell: what the branch would break. It never gates (CI lets it fail).
Environment: MLXCOMPAT_CANARY_REPO (default mlx-lm's GitHub URL), MLXCOMPAT_CANARY_REF
(default HEAD), MLXCOMPAT_CANARY_OUT (default canary/).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, Any

from packaging.version import Version

from mlxcompat.matrix import Cell, Matrix
from mlxcompat.results import write_json_atomic

if TYPE_CHECKING:
    import nox

    from mlxcompat.nox import Sessions

REPO = "https://github.com/ml-explore/mlx-lm"
KEY = ("check", "mode", "model", "subject")


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


def compare(release: dict[str, Any], canary: dict[str, Any], matrix: Matrix,
            upstream: dict[str, str]) -> dict[str, Any]:
    """Rows unexpected in the canary and not in the release cell (new), unexpected in both
    (still), unexpected only in the release cell (fixed); a release row the canary lacks is
    new as well (fail closed)."""
    from mlxcompat.report.aggregate import aggregate

    rows = aggregate([release, canary], matrix)["results"]
    by_cell: dict[str, dict[tuple[str, ...], dict[str, Any]]] = {}
    for r in rows:
        by_cell.setdefault(r["cell"], {})[tuple(r[k] for k in KEY)] = r
    old, new = by_cell.get(release["cell"], {}), by_cell.get(canary["cell"], {})
    bad = {"new": [], "still": [], "fixed": []}
    for key, row in new.items():
        if row["outcome"] == "unexpected":
            before = old.get(key)
            bad["still" if before and before["outcome"] == "unexpected" else "new"].append(row)
    for key, row in old.items():
        if key not in new:
            bad["new"].append({**row, "cell": canary["cell"], "why": "no row in the canary"})
        elif row["outcome"] == "unexpected" and new[key]["outcome"] != "unexpected":
            bad["fixed"].append(new[key])
    packages = canary.get("env", {}).get("packages", {})
    line = (f"canary: mlx-lm {packages.get('mlx-lm', '?')} at {upstream['commit'][:12]} "
            f"({upstream['repo']}), mlx {packages.get('mlx', '?')}: {len(bad['new'])} "
            f"unexpected compared with the newest release cell {release['cell']} "
            f"({len(bad['still'])} unexpected in both, {len(bad['fixed'])} fixed on the branch)")
    def brief(r: dict[str, Any]) -> str:
        return " ".join(r[k] for k in KEY if r[k]) + f": {r['why'] or r['verdict']}"
    return {"line": line, "upstream": upstream, "release_cell": release["cell"],
            "packages": packages, **{k: [brief(r) for r in v] for k, v in bad.items()}}


def _run_cell(session: nox.Session, s: Sessions, name: str, cell: Cell, out: Path,
              install: dict[str, Any], subjects: Path) -> dict[str, Any]:
    record = out / f"{name}.install.json"
    record.write_text(json.dumps(install))
    session.run("mlxcompat", "--matrix", str(s.matrix_file), "run", "--cell", name,
                "--out", str(out / f"{name}.json"), "--install-json", str(record),
                "--subject-dir", str(subjects), "--backend", s.backend, "--bench", "off",
                "--subjects", ",".join(cell.subjects), "--models", ",".join(cell.models),
                env={"HF_HUB_OFFLINE": "1"})
    return dict(json.loads((out / f"{name}.json").read_text(encoding="utf-8")))


def run_canary(session: nox.Session, s: Sessions) -> None:
    from mlxcompat.nox import _install
    from mlxcompat.pypi import newest

    release = newest_release_cell(s.matrix)
    upstream = {"repo": os.environ.get("MLXCOMPAT_CANARY_REPO", REPO),
                "ref": os.environ.get("MLXCOMPAT_CANARY_REF", "HEAD")}
    upstream["commit"] = upstream_commit(upstream["repo"], upstream["ref"])
    out = Path(os.environ.get("MLXCOMPAT_CANARY_OUT", "canary")).resolve()
    out.mkdir(parents=True, exist_ok=True)
    venv = Path(session.virtualenv.location)
    (venv / "mlxcompat-install.json").unlink(missing_ok=True)  # the venv is swapped below
    log = out / "install.log"
    log.write_text("")
    install = s.install_cell(session, release, log)
    bad = {k: v for k, v in install["subjects"].items() if v != "ok"}
    if install["status"] != "ok" or bad:
        session.error(f"{release.id}: install failed: {install.get('error', bad)}")
    doc = _run_cell(session, s, release.id, release, out, install, venv / "subjects")
    mlx = s.matrix.mlx_template(backend=s.backend).format(v=newest("mlx"))
    branch = f"mlx-lm @ git+{upstream['repo']}@{upstream['commit']}"
    _install(session, log, branch, mlx)
    (venv / "mlxcompat-install.json").unlink(missing_ok=True)
    canary_install = {**install, "requirements": [branch, mlx], "resolved": {},
                      "upstream": upstream, "reused": False}
    canary = _run_cell(session, s, "canary", release, out, canary_install, venv / "subjects")
    summary = compare(doc, canary, s.matrix, upstream)
    write_json_atomic(out / "summary.json", summary)
    if os.environ.get("GITHUB_STEP_SUMMARY"):
        with open(os.environ["GITHUB_STEP_SUMMARY"], "a", encoding="utf-8") as fh:
            fh.write(f"{summary['line']}\n\n" + "".join(f"- new: {r}\n"
                                                       for r in summary["new"][:30]))
    print(summary["line"])
    for r in summary["new"][:30]:
        print(f"canary: new: {r}")
    if summary["new"]:
        session.error(summary["line"])


def register_canary(s: Sessions) -> None:
    import nox

    @nox.session(python=s.python, default=False, tags=["canary"])
    def canary(session: nox.Session) -> None:
        """mlx-lm's default branch (one recorded commit) with the newest mlx, beside the newest
        release cell: rows unexpected there and not in the release cell fail the session."""
        run_canary(session, s)
