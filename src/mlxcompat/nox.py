"""nox sessions for any project with a matrix.yaml: `from mlxcompat.nox import sessions`.

    # noxfile.py
    from mlxcompat.nox import sessions
    sessions(matrix="matrix.yaml")

registers `matrix` (one session per cell, tagged as in matrix.yaml), `drift` and `report`
(run after the cells), `releases`, `bisect` and `canary` (mlxcompat.canary); this repository's
noxfile too. Every list of releases comes from the matrix. Environment: MLXCOMPAT_MATRIX,
MLXCOMPAT_RAW, MLXCOMPAT_LABEL (runner label: files become <cell>@<label>.json),
MLXCOMPAT_BACKEND, MLXCOMPAT_HARNESS (how cells install mlxcompat), MLXCOMPAT_SKIP_REPORT=1,
MLXCOMPAT_BYTECODE=0 (keep PYTHONDONTWRITEBYTECODE as set: mlxcompat.bytecode),
MLXCOMPAT_OVERLAP=0 (each cell runs to its end before the next: mlxcompat.cell_runs).
"""

from __future__ import annotations

import json
import os
import sys
import uuid
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import nox

from mlxcompat.bytecode import keep_bytecode
from mlxcompat.canary import register_canary
from mlxcompat.cell_install import pip_install
from mlxcompat.cell_runs import CellRuns
from mlxcompat.installs import harness_requirement, resolution_target
from mlxcompat.matrix import Cell, Matrix, load_matrix
from mlxcompat.records.cell import CellDoc, InstallRecord
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.names import cell_name

RUN_ID = os.environ.setdefault("MLXCOMPAT_RUN_ID", uuid.uuid4().hex[:12])
REPORT_FLAGS = ("--accept", "--no-html", "--screenshot", "--annotations")
REPORT_VALUES = ("--tag", "--junit", "--cells", "--since", "--labels")


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


def install_only(session: nox.Session) -> bool:
    """Whether nox runs with `--install-only` (it skips `session.run`, so a session must not
    clear results it will not write again); nox offers no public flag for it."""
    config = getattr(getattr(session, "_runner", None), "global_config", None)
    return bool(getattr(config, "install_only", False))


class Sessions:
    """The sessions of one matrix file (see the module docstring)."""

    def __init__(self, matrix: str | Path, raw: str | Path, python: str | None) -> None:
        self.matrix_file = Path(os.environ.get("MLXCOMPAT_MATRIX", matrix)).resolve()
        self.matrix: Matrix = load_matrix(self.matrix_file)
        self.raw = Path(os.environ.get("MLXCOMPAT_RAW", raw)).resolve()
        self.label = os.environ.get("MLXCOMPAT_LABEL", "")
        self.backend = os.environ.get("MLXCOMPAT_BACKEND", self.matrix.settings.backend)
        self.python = python or self.matrix.settings.python
        self.ran: list[str] = []  # the cells this nox invocation ran (the report needs them)
        self.run_id = RUN_ID
        self.install = pip_install
        self._resolving: dict[str, Future[dict[str, str]]] = {}
        self.runs = CellRuns()  # cell runs still timing rounds while the next cell runs

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
        pins = self.resolution(cell).result() if cell.resolve else dict(cell.pins)
        return cell.requirements(template, self.matrix.source_dir(), pins), pins

    def sources(self, cell: Cell) -> dict[str, str]:
        """The commit (or tree hash) of each package the cell builds from source."""
        from mlxcompat.source_install import identity

        return {k: identity(s, self.matrix.source_dir()) for k, s in cell.sources.items()}

    def install_cell(self, session: nox.Session, cell: Cell, log: Path) -> InstallRecord:
        """Install the harness, the cell's releases and each subject (cell_install.py)."""
        from mlxcompat.cell_install import install_cell

        try:
            requirements, pins = self.cell_requirements(cell)
        except Exception as exc:  # resolution
            return InstallRecord(backend=self.backend, harness=harness_requirement(), ok=False,
                                 error=str(exc), seconds=0.0, log_tail=str(exc))
        record = install_cell(session, self.matrix, cell, requirements, pins, self.backend, log)
        record.resolved_for = resolution_target(cell)
        return record

    def run_matrix(self, session: nox.Session, cell_id: str, curve: bool = False) -> None:
        """One cell's run into <cell>.json; with `curve`, only the throughput of the cell's
        curve profile (besides install and import) into <cell>.curve.json."""
        from mlxcompat.runplan import plan, selection_parser

        if os.environ.get("MLXCOMPAT_SKIP_REPORT") != "1":
            if not curve:
                session.notify("drift")
            session.notify("report")
        cell = self.matrix.cell(cell_id)
        if not curve:  # a curve alone leaves the report whole: it joins a cell's rows
            self.ran.append(cell_id)
        if any(c.resolve for c in self.matrix.cells):
            self.resolution(next(c for c in self.matrix.cells if c.resolve))  # start early
        name = cell_name(cell_id, self.label)
        stem = f"{name}.curve" if curve else name
        out = self.raw / f"{stem}.json"
        args = selection_parser().parse_args(split_posargs(session.posargs)[0])
        if curve:
            args.bench, args.checks = cell.curve, "install,import"
        if args.reuse:
            reused = self.reused(session, cell, out, args)
            if reused:
                print(f"[mlxcompat] {name}: reused (inputs unchanged since run {reused})")
                return
        venv = Path(session.virtualenv.location)
        log = venv / "install.log"
        if install_only(session):  # venvs only: the cell's last results stay as they are
            log.write_text("")
            self.install_cell(session, cell, log)
            return
        from mlxcompat.records.files import last_check_seconds

        last = last_check_seconds(out)
        for stale in (out, out.with_name(f"{stem}.bench.json")):
            stale.unlink(missing_ok=True)  # a crash must never leave old results standing
        log.write_text("")
        overlap = self.runs.overlap(self.matrix.backend(self.backend).device)
        if overlap:
            self.runs.before_install()
        install = self.install_cell(session, cell, log)
        print(f"[mlxcompat] {name}: install {'ok' if install.ok else 'failed'} in "
              f"{install.seconds}s")
        if not install.ok:
            doc = CellDoc(cell=name, install=install, run_id=RUN_ID, complete=True)
            write_json_atomic(out, doc.to_json())
            session.warn(f"{name}: install failed; wrote {out}:\n{install.log_tail}")
            return
        from mlxcompat.cell_install import sharing

        run = plan(self.matrix, cell_id, args, label=self.label, backend=self.backend, out=out,
                   pins=install.resolved or dict(cell.pins), run_id=RUN_ID, install=install,
                   subject_dir=str(venv / "subjects"), same_as=sharing(
                       self.matrix, cell, install, venv),
                   sources={k: v.commit if cell.sources[k].git else "tree:" + v.tree
                            for k, v in install.sources.items()})
        run.last_seconds = last
        argv = ["mlxcompat", "--matrix", str(self.matrix_file), "run", "--cell-run",
                str(run.write(venv / "cell-run.json"))]
        profile = self.matrix.settings.bench.profiles.get(run.bench)
        self.runs.launch(session, name, argv, {"HF_HUB_OFFLINE": "1"}, overlap,
                         gating=profile is not None and profile.gating)

    def reused(self, session: nox.Session, cell: Cell, out: Path, args: Any) -> str:
        """The run id of the cell's last result when every subject of it can be reused
        (a resolved cell is resolved again first: reused only while it resolves to the same
        releases); '' when the cell must run."""
        from mlxcompat.inputs import reused_subjects
        from mlxcompat.records.base import RecordError
        from mlxcompat.records.cell import read_cell
        from mlxcompat.runplan import plan

        try:
            old = read_cell(out) if out.exists() else None
            pins = self.cell_requirements(cell)[1] if cell.resolve else dict(cell.pins)
            sources = self.sources(cell)
        except (RecordError, RuntimeError, OSError):  # unreadable, or resolving failed: run it
            return ""
        if old is None or not old.install.ok:
            return ""
        pins.update({k: v.version for k, v in old.install.sources.items()})
        run = plan(self.matrix, cell.id, args, label=self.label, backend=self.backend,
                   out=out, pins=pins, run_id=RUN_ID, sources=sources)
        if set(reused_subjects(old, run.inputs)) != set(run.subjects):
            return ""
        old.reused_by = RUN_ID
        write_json_atomic(out, old.to_json())
        return old.run_id

    def run_upstream(self, session: nox.Session, cell_id: str) -> None:
        args = list(session.posargs)
        name = args[args.index("--subject") + 1] if "--subject" in args else "mlxcompat"
        subject = self.matrix.subjects.get(name)
        if subject is None:
            session.error(f"no subject {name!r} in {self.matrix_file.name}")
            return
        cell = self.matrix.cell(cell_id)
        venv = Path(session.virtualenv.location)
        log = venv / "install.log"
        log.write_text("")
        install = self.install_cell(session, cell, log)
        installed = install.subjects.get(name)
        if not install.ok or (installed is not None and not installed.ok):
            session.error(f"{cell_id}: install failed:\n{install.log_tail}")
        session.run("python", "-m", "mlxcompat.upstream_suite", "--cell", cell_id,
                    "--subject", name, "--entry-points", json.dumps(subject.entry_points),
                    "--subject-path", str(venv / "subjects" / name),
                    "--cache", str(Path(".nox", "sdists").resolve()),
                    "--out", str(self.raw / f"{cell_id}.upstream.{name}.json"),
                    env={"HF_HUB_OFFLINE": "1"})


def sessions(matrix: str | Path = "matrix.yaml", raw: str | Path = "reports/raw",
             python: str | None = None) -> Sessions:
    """Register the mlxcompat sessions for `matrix` in the calling noxfile."""
    s = Sessions(matrix, raw, python)
    s.runs.pass_signals_on()  # a signal to nox alone reaches the cell runs it started
    keep_bytecode(Path(".nox", "pycache"))  # every session's processes (mlxcompat.bytecode)
    nox.options.default_venv_backend = "uv|virtualenv"
    nox.options.reuse_venv = "yes"
    nox.options.sessions = ["matrix", "drift", "report"]
    order = sorted(s.matrix.cells, key=lambda c: bool(c.resolve))  # resolved cells last
    cells = [nox.param(c.id, id=c.id, tags=list(c.tags)) for c in order]

    @nox.session(name="matrix", python=s.python)
    @nox.parametrize("cell", cells)
    def matrix_session(session: nox.Session, cell: str) -> None:
        """One cell of matrix.yaml: install its releases, run every check, write its JSON."""
        s.run_matrix(session, cell)

    @nox.session(python=s.python)
    def drift(session: nox.Session) -> None:
        """The API-drift scan of every release's wheel, and each subject's declared range."""
        s.runs.before_install()  # beside the last cell's timed rounds, off their CPU
        session.install(*harness_requirement())
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "drift", "--cache",
                    str(Path(".nox", "wheels").resolve()), "--out",
                    str(s.raw.parent / "drift.json"))
        s.runs.finish(session)

    @nox.session(python=s.python)
    def report(session: nox.Session) -> None:
        """compat.{json,md,html} from reports/raw, against the baseline; fails closed."""
        s.runs.finish(session)
        session.install(*harness_requirement())
        session.install("jinja2>=3", "matplotlib>=3.8")
        own = split_posargs(session.posargs)[1]
        if s.ran and len(set(s.ran)) < len(s.matrix.cells):  # e.g. `nox -t quick`
            own.append(f"--cells={','.join(s.ran)}")
        session.run("mlxcompat", "--matrix", str(s.matrix_file), "report", "--raw", str(s.raw),
                    *own)

    @nox.session(python=s.python, default=False, tags=["bench"])
    @nox.parametrize("cell", [nox.param(c.id, id=c.id) for c in s.matrix.cells if c.curve])
    def curve(session: nox.Session, cell: str) -> None:
        """The batching curve of a cell that names one (`curve:`): throughput only, into
        <cell>.curve.json, which the report joins to the cell's rows."""
        s.run_matrix(session, cell, curve=True)

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
