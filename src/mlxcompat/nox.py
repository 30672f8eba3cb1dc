"""nox sessions for any project with a matrix.yaml: `from mlxcompat.nox import sessions`.

    # noxfile.py
    from mlxcompat.nox import sessions
    sessions(matrix="matrix.yaml")

registers `matrix` (one session per cell, tagged as in matrix.yaml), `probe` and `report`
(run after the cells), and the maintenance sessions `releases` and `bisect`. This
repository's own noxfile is built from it too. Every list of releases comes from the matrix.
Environment overrides: MLXCOMPAT_MATRIX, MLXCOMPAT_RAW, MLXCOMPAT_LABEL (runner label, files
become <cell>@<label>.json), MLXCOMPAT_BACKEND, MLXCOMPAT_HARNESS (how cells install mlxcompat),
MLXCOMPAT_SKIP_REPORT=1 (CI cell jobs leave the report to one job).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import nox

from mlxcompat.matrix import Cell, Matrix, load_matrix
from mlxcompat.results import empty_cell, write_json_atomic

RUN_ID = os.environ.setdefault("MLXCOMPAT_RUN_ID", uuid.uuid4().hex[:12])
REPORT_FLAGS = ("--accept", "--no-html", "--screenshot", "--annotations")
REPORT_VALUES = ("--tag", "--junit")


def harness_requirement() -> list[str]:
    """How a cell's venv installs mlxcompat: the same code this noxfile is running.

    A source checkout (this repository, or a clone) installs editable; an installed
    distribution is installed the way it was (PEP 610: a wheel file, a VCS URL, a version).
    """
    override = os.environ.get("MLXCOMPAT_HARNESS")
    if override:
        return override.split()
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").exists() and Path(__file__).resolve().parent.parent.name == "src":
        return ["-e", str(tree)]
    from importlib import metadata

    dist = metadata.distribution("mlxcompat")
    direct = dist.read_text("direct_url.json")
    if not direct:
        return [f"mlxcompat=={dist.version}"]
    info = json.loads(direct)
    url = info.get("url", "")
    if info.get("dir_info", {}).get("editable"):
        return ["-e", url.removeprefix("file://")]
    if "vcs_info" in info:
        vcs = info["vcs_info"]
        return [f"mlxcompat @ {vcs['vcs']}+{url}@{vcs.get('commit_id', '')}"]
    return [url.removeprefix("file://")]


def _install(session: nox.Session, log: Path, *args: str) -> None:
    """`pip install` into the session venv (uv when there), output to `log`."""
    with log.open("a") as fh:
        if session.venv_backend == "uv":
            session.run_install("uv", "pip", "install", "--python", session.virtualenv.location,
                                *args, stdout=fh, stderr=subprocess.STDOUT, external=True)
        else:
            session.run_install("python", "-m", "pip", "install", *args, stdout=fh,
                                stderr=subprocess.STDOUT)


class Sessions:
    """The sessions of one matrix file (see the module docstring)."""

    def __init__(self, matrix: str | Path, raw: str | Path, python: str | None) -> None:
        self.matrix_file = Path(os.environ.get("MLXCOMPAT_MATRIX", matrix)).resolve()
        self.matrix: Matrix = load_matrix(self.matrix_file)
        self.raw = Path(os.environ.get("MLXCOMPAT_RAW", raw)).resolve()
        self.label = os.environ.get("MLXCOMPAT_LABEL", "")
        self.backend = os.environ.get("MLXCOMPAT_BACKEND", self.matrix.settings["backend"])
        self.python = python or self.matrix.settings["python"]

    def cell_requirements(self, cell: Cell) -> tuple[list[str], dict[str, str]]:
        """pip requirements of a cell, resolving a `latest` / as-installed cell first."""
        template = self.matrix.mlx_template(sys.platform, self.backend)
        pins = dict(cell.pins)
        if cell.resolve:
            from mlxcompat.resolve import resolve_cell

            pins = resolve_cell(cell, self.matrix)
        reqs = [f"{name}=={v}" for name, v in pins.items() if name != "mlx"]
        return [*reqs, template.format(v=pins["mlx"])], pins

    def install_cell(self, session: nox.Session, cell: Cell, log: Path) -> dict[str, Any]:
        """Install the harness, the cell's pins, and each subject (requirements into a folder
        of their own, --no-deps; local paths editable, --no-deps)."""
        start = time.perf_counter()
        record: dict[str, Any] = {"status": "ok", "subjects": {}, "backend": self.backend,
                                  "harness": harness_requirement()}
        try:
            record["requirements"], record["resolved"] = self.cell_requirements(cell)
            _install(session, log, *record["harness"], *record["requirements"])
        except Exception as exc:  # resolution or install
            record["status"] = "failed"
            record["error"] = str(exc)
        root = Path(session.virtualenv.location) / "subjects"
        for name in cell.subjects if record["status"] == "ok" else ():
            spec = self.matrix.subjects[name]
            try:
                if spec.requirements:
                    _install(session, log, "--no-deps", "--reinstall", "--target",
                             str(root / name), *spec.requirements)
                for path in spec.paths:
                    target = (self.matrix.source_dir() / path).expanduser().resolve()
                    _install(session, log, "--no-deps", "-e", str(target))
                if spec.install:
                    record["subjects"][name] = "ok"
            except nox.command.CommandFailed as exc:
                record["subjects"][name] = f"failed: {exc}"
        record["seconds"] = round(time.perf_counter() - start, 2)
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        record["log_tail"] = "\n".join(lines[-25:])
        return record

    def run_matrix(self, session: nox.Session, cell_id: str) -> None:
        if os.environ.get("MLXCOMPAT_SKIP_REPORT") != "1":
            session.notify("probe")
            session.notify("report")
        cell = self.matrix.cell(cell_id)
        name = f"{cell_id}@{self.label}" if self.label else cell_id
        out = self.raw / f"{name}.json"
        posargs = [a for a in session.posargs if a not in REPORT_FLAGS
                   and not a.startswith(REPORT_VALUES)]
        if "--reuse" in posargs and self.reusable(cell, out, posargs):
            print(f"[mlxcompat] {name}: reused (inputs unchanged since run "
                  f"{json.loads(out.read_text()).get('run_id')})")
            return
        for stale in (out, out.with_name(f"{name}.bench.json")):
            stale.unlink(missing_ok=True)  # a crash must never leave old results standing
        venv = Path(session.virtualenv.location)
        log = venv / "install.log"
        log.write_text("")
        install = self.install_cell(session, cell, log)
        print(f"[mlxcompat] {name}: install {install['status']} in {install['seconds']}s")
        if install["status"] != "ok":
            doc = empty_cell(name)
            doc.update(install=install, run_id=RUN_ID, complete=True)
            write_json_atomic(out, doc)
            session.warn(f"{name}: install failed; wrote {out}:\n{install['log_tail']}")
            return
        install["inputs"] = self.inputs(cell, posargs, install)
        (venv / "install.json").write_text(json.dumps(install))
        session.run("mlxcompat", "--matrix", str(self.matrix_file), "run", "--cell", name,
                    "--out", str(out), "--install-json", str(venv / "install.json"),
                    "--subject-dir", str(venv / "subjects"), "--backend", self.backend,
                    "--run-id", RUN_ID, *posargs, env={"HF_HUB_OFFLINE": "1"})

    def inputs(self, cell: Cell, posargs: list[str], install: dict[str, Any] | None
               ) -> dict[str, Any]:
        """The inputs `mlxcompat run` records and `--reuse` compares (see mlxcompat.inputs)."""
        from mlxcompat.inputs import digest, harness_hash, subject_inputs

        pins = (install or {}).get("resolved") or dict(cell.pins)
        options = [a for a in posargs if a not in ("--reuse",) and not a.startswith("-j")]
        return {"cell": digest({"pins": pins, "backend": self.backend, "label": self.label,
                                "options": options, "harness": harness_hash()}),
                "subjects": {s: digest(subject_inputs(self.matrix.subjects[s],
                                                      self.matrix.source_dir()))
                             for s in cell.subjects}}

    def reusable(self, cell: Cell, out: Path, posargs: list[str]) -> bool:
        """The cell's last complete result has the same inputs (pinned cells only)."""
        if cell.resolve or not out.exists():
            return False
        try:
            old = json.loads(out.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):
            return False
        if not old.get("complete") or old.get("inputs") != self.inputs(cell, posargs, None):
            return False
        if any(r.get("check") == "run" for r in old.get("results", [])):
            return False
        old["reused_by"] = RUN_ID
        write_json_atomic(out, old)
        return True


def sessions(matrix: str | Path = "matrix.yaml", raw: str | Path = "reports/raw",
             python: str | None = None) -> Sessions:
    """Register the mlxcompat sessions for `matrix` in the calling noxfile."""
    s = Sessions(matrix, raw, python)
    nox.options.default_venv_backend = "uv|virtualenv"
    nox.options.reuse_venv = "yes"
    nox.options.sessions = ["matrix", "probe", "report"]
    cells = [nox.param(c.id, id=c.id, tags=list(c.tags)) for c in s.matrix.cells]

    @nox.session(python=s.python)
    @nox.parametrize("cell", cells)
    def matrix(session: nox.Session, cell: str) -> None:
        """One cell of matrix.yaml: install its releases, run every check, write its JSON."""
        s.run_matrix(session, cell)

    @nox.session(python=s.python)
    def probe(session: nox.Session) -> None:
        """Static API-drift table of every release, and each subject's declared range."""
        session.install(*harness_requirement())
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "probe", "--cache",
                    str(Path(".nox", "wheels").resolve()), "--out",
                    str(s.raw.parent / "probe.json"))

    @nox.session(python=s.python)
    def report(session: nox.Session) -> None:
        """compat.{json,md,html} from reports/raw, against the baseline; fails closed."""
        session.install(*harness_requirement())
        session.install("jinja2>=3", "matplotlib>=3.8")
        own = [a for a in session.posargs if a in REPORT_FLAGS or a.startswith(REPORT_VALUES)]
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "report", "--raw", str(s.raw),
                    *own)

    @nox.session(python=s.python, default=False, tags=["maintenance"])
    def releases(session: nox.Session) -> None:
        """Upstream releases newer than the matrix's cells (`-- --write` appends cells)."""
        session.install(*harness_requirement())
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "releases", *session.posargs)

    @nox.session(python=s.python, default=False, tags=["maintenance"])
    def bisect(session: nox.Session) -> None:
        """First mlx-lm release where a verdict changes (`-- --check … --between A B`)."""
        session.install(*harness_requirement())
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "bisect", *session.posargs,
                    external=True)

    return s
