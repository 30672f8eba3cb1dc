"""A venv a subject wrote into is put back before the cell runs, under nox's `--no-install`
(`-R`) too, and a venv still unlike its RECORDs, or out of date while installs are skipped,
fails the cell instead of running what is there."""

from __future__ import annotations

import base64
import hashlib
import json
import shutil
from pathlib import Path
from types import SimpleNamespace

from mlxcompat.cell_install import _plan, install_cell
from mlxcompat.installs import install_key
from mlxcompat.matrix import load_matrix
from mlxcompat.records.cell import InstallRecord

MATRIX = load_matrix(Path(__file__).resolve().parents[2] / "matrix.yaml")
CELL = MATRIX.cell("mlx-lm-0.31.3")
ORIGINAL = b"mlx-lm's own deepseek_v3\n"
TARGET = "mlx_lm/models/deepseek_v3.py"


class FakeSession:
    """A reused venv; `skip_installs` is nox's --no-install. `run` is the installer: with
    `repairs`, a reinstall puts the original file back."""

    venv_backend = "uv"
    python = "3.11"

    def __init__(self, venv: Path, skip_installs: bool, repairs: bool = True) -> None:
        self.virtualenv = SimpleNamespace(location=str(venv))
        self.skip_installs, self.repairs = skip_installs, repairs
        self.calls: list[tuple[str, tuple[str, ...]]] = []

    def run_install(self, *args: str, **kwargs: object) -> bool | None:
        if self.skip_installs:
            return None
        return self.run(*args, **kwargs)

    def run(self, *args: str, **kwargs: object) -> bool:
        self.calls.append(("run", args))
        if self.repairs and "--reinstall-package" in args:
            (self.site / TARGET).write_bytes(ORIGINAL)
        return True

    @property
    def site(self) -> Path:
        return Path(self.virtualenv.location) / "lib/python3.11/site-packages"


def _venv(tmp: Path, installed_key: bool) -> Path:
    """A venv holding mlx-lm's deepseek_v3.py as vMLX leaves it: replaced, a backup beside."""
    venv = tmp / "venv"
    site = venv / "lib/python3.11/site-packages"
    (site / "mlx_lm/models").mkdir(parents=True)
    (site / TARGET).write_bytes(ORIGINAL)
    digest = base64.urlsafe_b64encode(hashlib.sha256(ORIGINAL).digest()).rstrip(b"=").decode()
    info = site / "mlx_lm-0.31.3.dist-info"
    info.mkdir()
    (info / "RECORD").write_text(f"{TARGET},sha256={digest},{len(ORIGINAL)}\n")
    (site / TARGET).write_bytes(b"vmlx's copy\n")
    (site / f"{TARGET}.vmlx-backup-1").write_bytes(ORIGINAL)
    record = InstallRecord(requirements=["mlx-lm==0.31.3"])
    from mlxcompat.installs import harness_requirement

    record.harness = harness_requirement()
    key = install_key(_plan(MATRIX, CELL, record, venv), "3.11") if installed_key else "old"
    (venv / "mlxcompat-install.json").write_text(json.dumps({"key": key, "subjects": ["vmlx"]}))
    return venv


def _install(session: FakeSession, tmp: Path) -> InstallRecord:
    return install_cell(session, MATRIX, CELL, ["mlx-lm==0.31.3"], {}, "cpu",
                        tmp / "install.log")


def test_a_written_venv_is_put_back_even_when_nox_skips_installs(tmp_path: Path) -> None:
    session = FakeSession(_venv(tmp_path, installed_key=True), skip_installs=True)
    record = _install(session, tmp_path)
    assert record.ok, record.error
    assert (session.site / TARGET).read_bytes() == ORIGINAL
    assert not (session.site / f"{TARGET}.vmlx-backup-1").exists()
    assert [c for c in session.calls if "--reinstall-package" in c[1]]
    assert "reinstalled: mlx-lm" in record.log_tail
    assert f"deleted (no RECORD lists them): {TARGET}.vmlx-backup-1" in record.log_tail


def test_a_venv_the_reinstall_did_not_mend_fails_the_cell(tmp_path: Path) -> None:
    session = FakeSession(_venv(tmp_path, True), skip_installs=False, repairs=False)
    record = _install(session, tmp_path)
    assert not record.ok
    assert record.error.startswith(f"{TARGET} still differ from their RECORD")


def test_an_out_of_date_venv_under_no_install_fails_and_keeps_no_marker(tmp_path: Path) -> None:
    venv = _venv(tmp_path, installed_key=False)
    record = _install(FakeSession(venv, skip_installs=True), tmp_path)
    assert not record.ok
    assert "nox skipped installing (--no-install / -R)" in record.error
    assert not (venv / "mlxcompat-install.json").exists()


def test_an_out_of_date_venv_is_installed_and_marked(tmp_path: Path) -> None:
    venv = _venv(tmp_path, installed_key=False)
    session = FakeSession(venv, skip_installs=False)
    record = _install(session, tmp_path)
    assert record.ok, record.error
    assert not record.reused
    assert json.loads((venv / "mlxcompat-install.json").read_text())["key"] != "old"


def test_a_cell_from_a_local_tree_under_no_install_fails_and_says_why(tmp_path: Path) -> None:
    """A cell built from source is installed on every run (its tree moves without its
    version): when nox skips that, the cell fails instead of running the last install."""
    from mlxcompat.matrix import parse_matrix

    (tmp_path / "mlx-lm" / "mlx_lm").mkdir(parents=True)
    doc = {"schema": 3, "subjects": {"none": {}},
           "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
           "cells": [{"mlx-lm": {"path": "mlx-lm"}, "mlx": "0.32.2"}]}
    matrix = parse_matrix(doc, tmp_path / "matrix.yaml")
    cell = matrix.cells[0]
    venv = tmp_path / "venv"
    (venv / "lib/python3.11/site-packages").mkdir(parents=True)
    requirements = cell.requirements("mlx[cpu]=={v}", tmp_path)
    record = install_cell(FakeSession(venv, skip_installs=True), matrix, cell, requirements,
                          {}, "cpu", tmp_path / "install.log")
    assert not record.ok
    assert record.error.startswith("this cell builds from source, installed on every run, and "
                                   "nox skipped installing")
    assert record.requirements[0] == str(venv / "sources" / "mlx-lm")  # the clean copy
    shutil.rmtree(tmp_path / "mlx-lm")
    gone = install_cell(FakeSession(venv, skip_installs=False), matrix, cell, requirements,
                        {}, "cpu", tmp_path / "install.log")
    assert not gone.ok and gone.error.startswith("cannot copy the cell's source folder")
