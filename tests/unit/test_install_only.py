"""`nox -s matrix --install-only` builds venvs and keeps every cell's last results: nox skips
`session.run` there, so a session that cleared its results first would leave none."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from mlxcompat.nox import Sessions, install_only

MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"


class FakeSession:
    """What run_matrix touches of a nox session; `run` must not be reached."""

    def __init__(self, venv: Path, flag: bool) -> None:
        self._runner = SimpleNamespace(global_config=SimpleNamespace(install_only=flag))
        self.virtualenv = SimpleNamespace(location=str(venv))
        self.posargs: list[str] = []
        self.installed = 0

    def notify(self, name: str) -> None:
        pass

    def run(self, *args: object, **kwargs: object) -> None:
        raise AssertionError("session.run reached under --install-only")


@pytest.mark.parametrize("flag", [True, False])
def test_the_flag_is_read_from_the_runner(flag: bool, tmp_path: Path) -> None:
    assert install_only(FakeSession(tmp_path, flag)) is flag  # type: ignore[arg-type]
    assert install_only(SimpleNamespace()) is False  # type: ignore[arg-type]


def test_install_only_installs_and_keeps_the_results(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MLXCOMPAT_RAW", str(tmp_path / "raw"))
    monkeypatch.setenv("MLXCOMPAT_SKIP_REPORT", "1")
    sessions = Sessions(MATRIX, tmp_path / "raw", None)
    (tmp_path / "raw").mkdir()
    kept = [tmp_path / "raw" / "mlx-lm-0.32.2.json", tmp_path / "raw" / "mlx-lm-0.32.2.bench.json"]
    for path in kept:
        path.write_text("{}")
    session = FakeSession(tmp_path, True)

    def install_cell(s: FakeSession, cell: object, log: Path) -> None:
        s.installed += 1

    monkeypatch.setattr(sessions, "install_cell", install_cell)
    sessions.run_matrix(session, "mlx-lm-0.32.2")  # type: ignore[arg-type]
    assert session.installed == 1
    assert all(path.read_text() == "{}" for path in kept)
