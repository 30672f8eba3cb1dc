"""nox sessions for any project with a matrix.yaml: `from mlxcompat.nox import sessions`.

    # noxfile.py
    from mlxcompat.nox import sessions
    sessions(matrix="matrix.yaml")

registers `matrix` (one session per cell, tagged as in matrix.yaml), `probe` and `report`
(run after the cells), `releases`, `bisect` and `canary` (mlxcompat.canary); this repository's
noxfile too. Every list of releases comes from the matrix. Environment: MLXCOMPAT_MATRIX,
MLXCOMPAT_RAW, MLXCOMPAT_LABEL (runner label: files become <cell>@<label>.json),
MLXCOMPAT_BACKEND, MLXCOMPAT_HARNESS (how cells install mlxcompat), MLXCOMPAT_SKIP_REPORT=1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nox

from mlxcompat.canary import register_canary
from mlxcompat.installs import harness_requirement, install_key, resolution_record
from mlxcompat.matrix import Cell, Matrix, load_matrix
from mlxcompat.results import empty_cell, write_json_atomic

RUN_ID = os.environ.setdefault("MLXCOMPAT_RUN_ID", uuid.uuid4().hex[:12])
REPORT_FLAGS = ("--accept", "--no-html", "--screenshot", "--annotations")
REPORT_VALUES = ("--tag", "--junit", "--cells", "--labels")


def split_posargs(posargs: list[str]) -> tuple[list[str], list[str]]:
    """`nox -s matrix report -- ARGS`: (what `mlxcompat run` gets, what the report gets);
    report options take their value as `--tag=X` or `--tag X`."""
    run, report = [], []
    args = iter(posargs)
    for arg in args:
        if arg in REPORT_FLAGS or arg.startswith(tuple(f"{v}=" for v in REPORT_VALUES)):
            report.append(arg)
        elif arg in REPORT_VALUES:
            report += [arg, next(args, "")]
        else:
            run.append(arg)
    return run, report


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
        self.ran: list[str] = []  # the cells this nox invocation ran (the report needs them)
        self._resolving: dict[str, Future[dict[str, str]]] = {}

    def resolution(self, cell: Cell) -> Future[dict[str, str]]:
        """A resolved cell's pins, resolved in the background the first time any cell runs:
        resolving is index round trips (seconds), and the resolved cells run last."""
        if not self._resolving:
            from mlxcompat.resolve import resolve_cell

            pool = ThreadPoolExecutor(max_workers=2, thread_name_prefix="mlxcompat-resolve")
            self._resolving = {c.id: pool.submit(resolve_cell, c, self.matrix)
                               for c in self.matrix.cells if c.resolve}
            pool.shutdown(wait=False)
        return self._resolving[cell.id]

    def cell_requirements(self, cell: Cell) -> tuple[list[str], dict[str, str]]:
        """pip requirements of a cell, resolving a `latest` / as-installed cell first."""
        template = self.matrix.mlx_template(sys.platform, self.backend)
        pins = dict(cell.pins)
        if cell.resolve:
            pins = self.resolution(cell).result()
        reqs = [f"{name}=={v}" for name, v in pins.items() if name != "mlx"]
        return [*reqs, template.format(v=pins["mlx"])], pins

    def install_cell(self, session: nox.Session, cell: Cell, log: Path) -> dict[str, Any]:
        """Install the harness, the cell's pins, and each subject (requirements into a folder
        of their own, --no-deps; local paths editable, --no-deps).

        A reused venv whose install commands (and the pyproject.toml of everything installed
        editable) are unchanged since its last complete install is not installed again.
        """
        start = time.perf_counter()
        record: dict[str, Any] = {"status": "ok", "subjects": {}, "backend": self.backend,
                                  "harness": harness_requirement()}
        venv = Path(session.virtualenv.location)
        try:
            record["requirements"], record["resolved"] = self.cell_requirements(cell)
            record.update(resolution_record(cell))
        except Exception as exc:  # resolution
            record.update(status="failed", error=str(exc), seconds=0.0, log_tail=str(exc))
            return record
        plan: list[tuple[str, list[str]]] = [("", [*record["harness"], *record["requirements"]])]
        for name in cell.subjects:
            spec = self.matrix.subjects[name]
            if spec.requirements:
                plan.append((name, ["--no-deps", "--target", str(venv / "subjects" / name),
                                    *spec.requirements]))
            for path in spec.paths:
                target = (self.matrix.source_dir() / path).expanduser().resolve()
                plan.append((name, ["--no-deps", "-e", str(target)]))
        key = install_key(plan, str(session.python))
        marker = venv / "mlxcompat-install.json"
        done = json.loads(marker.read_text()) if marker.exists() else {}
        if done.get("key") == key:
            record.update(subjects=done["subjects"], seconds=0.0, reused=True,
                          log_tail="install inputs unchanged since the last install: skipped")
            return record
        marker.unlink(missing_ok=True)
        for name, args in plan:
            if record["status"] != "ok":
                break
            try:
                _install(session, log, *args)
                if name:
                    record["subjects"][name] = "ok"
            except Exception as exc:  # nox.command.CommandFailed, or the installer missing
                tail = [ln.strip() for ln in log.read_text(errors="replace").splitlines()
                        if ln.strip()][-3:] if log.exists() else []
                why = f"{exc}: {' | '.join(tail)}" if tail else str(exc)
                if not name:
                    record.update(status="failed", error=why)
                else:
                    record["subjects"][name] = f"failed: {why}"
        record["seconds"] = round(time.perf_counter() - start, 2)
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        record["log_tail"] = "\n".join(lines[-25:])
        if record["status"] == "ok" and all(v == "ok" for v in record["subjects"].values()):
            marker.write_text(json.dumps({"key": key, "subjects": record["subjects"]}))
        return record

    def run_matrix(self, session: nox.Session, cell_id: str) -> None:
        if os.environ.get("MLXCOMPAT_SKIP_REPORT") != "1":
            session.notify("probe")
            session.notify("report")
        cell = self.matrix.cell(cell_id)
        self.ran.append(cell_id)
        if any(c.resolve for c in self.matrix.cells):
            self.resolution(next(c for c in self.matrix.cells if c.resolve))  # start early
        name = f"{cell_id}@{self.label}" if self.label else cell_id
        out = self.raw / f"{name}.json"
        posargs = split_posargs(session.posargs)[0]
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

    def run_upstream(self, session: nox.Session, cell_id: str) -> None:
        args = list(session.posargs)
        name = args[args.index("--subject") + 1] if "--subject" in args else "mlxcompat"
        subject = self.matrix.subjects.get(name)
        if subject is None:
            session.error(f"no subject {name!r} in {self.matrix_file.name}")
        cell = self.matrix.cell(cell_id)
        venv = Path(session.virtualenv.location)
        log = venv / "install.log"
        log.write_text("")
        install = self.install_cell(session, cell, log)
        if install["status"] != "ok" or install["subjects"].get(name, "ok") != "ok":
            session.error(f"{cell_id}: install failed:\n{install.get('log_tail', '')}")
        session.run("python", "-m", "mlxcompat.upstream_suite", "--cell", cell_id,
                    "--subject", name, "--entry-points", json.dumps(subject.entry_points),
                    "--subject-path", str(venv / "subjects" / name),
                    "--cache", str(Path(".nox", "sdists").resolve()),
                    "--out", str(self.raw / f"{cell_id}.upstream.{name}.json"),
                    env={"HF_HUB_OFFLINE": "1"})

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
        """The cell's last complete result has the same inputs (a resolved cell is resolved
        again first: reused only while it resolves to the same releases)."""
        if not out.exists():
            return False
        try:
            old = json.loads(out.read_text(encoding="utf-8"))
            resolved = self.cell_requirements(cell)[1] if cell.resolve else None
        except Exception:  # unreadable JSON, or the resolution failed: run the cell
            return False
        now = self.inputs(cell, posargs, {"resolved": resolved} if resolved else None)
        if not old.get("complete") or old.get("inputs") != now:
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
    order = sorted(s.matrix.cells, key=lambda c: bool(c.resolve))  # resolved cells last
    cells = [nox.param(c.id, id=c.id, tags=list(c.tags)) for c in order]

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
        own = split_posargs(session.posargs)[1]
        if s.ran and len(set(s.ran)) < len(s.matrix.cells):  # e.g. `nox -t quick`
            own.append(f"--cells={','.join(s.ran)}")
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "report", "--raw", str(s.raw),
                    *own)

    @nox.session(python=s.python, default=False, tags=["upstream"])
    @nox.parametrize("cell", [nox.param(c.id, id=c.id) for c in s.matrix.cells
                              if "mlx-vlm" not in c.pins])
    def upstream(session: nox.Session, cell: str) -> None:
        """mlx-lm's own tests from the cell's sdist, without and with a subject's patches
        (`-- --subject NAME`, default mlxcompat): every changed outcome is a fail."""
        s.run_upstream(session, cell)

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

    register_canary(s)
    return s
