"""Publish-ready: `uv build` makes one wheel and one sdist of the one version, and the wheel
alone, in a fresh venv, installs and runs (scripts/check_wheel.py, as CI and release run it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mlxcompat import __version__

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_the_built_wheel_installs_and_runs(tmp_path) -> None:
    subprocess.run(["uv", "build", "-q", "--out-dir", str(tmp_path), str(ROOT)], check=True)
    check = [sys.executable, str(ROOT / "scripts" / "check_wheel.py"), str(tmp_path)]
    ok = subprocess.run([*check, "--tag", f"v{__version__}"], capture_output=True, text=True,
                        check=False)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert f"mlxcompat {__version__} from" in ok.stdout
    wrong = subprocess.run([*check, "--tag", "v0.0.0"], capture_output=True, text=True,
                           check=False)
    assert wrong.returncode == 1 and "is not v" in wrong.stderr
