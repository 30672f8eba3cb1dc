"""The slice of nox that `mlxcompat.cell_runs` uses, and venvs whose one command is a small
Python script: the nox side of cell runs tested against real child processes."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path


class FakeSession:
    """The slice of nox.Session that CellRuns uses."""

    def __init__(self, venv: Path) -> None:
        self.virtualenv = type("Venv", (), {"location": str(venv)})()
        self.errors: list[str] = []
        self.logged: list[str] = []

    def log(self, text: str) -> None:
        self.logged.append(text)

    def error(self, text: str) -> None:
        self.errors.append(text)
        raise RuntimeError(text)


def venv_with(tmp_path: Path, body: str) -> Path:
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    script = venv / "bin" / "fake-run"
    script.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    script.chmod(0o755)
    return venv
