"""Subjects of a cell share one environment: their watch windows take turns, so a file one
subject's import writes is never charged to another's entry point (CI saw vMLX's
deepseek_v3.py land in Rapid-MLX's idempotence row when the two ran side by side)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from mlxcompat.drivers.installed import watch_alone


def test_a_second_process_of_the_environment_waits_for_the_first(tmp_path) -> None:
    marker = tmp_path / "left"
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(f"""
            import time
            from mlxcompat.drivers.installed import watch_alone
            with watch_alone():
                print("in", flush=True)
                time.sleep(0.5)
                open({str(marker)!r}, "w").write("done")
            """)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stdout.readline().strip() == "in"
    with watch_alone():
        assert marker.exists(), "entered while the other process was inside its window"
    assert child.wait(timeout=30) == 0


@pytest.mark.parametrize("venv", [True, False], ids=["venv", "interpreter-prefix"])
def test_the_lock_file_lives_in_a_virtual_environment_only(tmp_path, monkeypatch,
                                                           venv: bool) -> None:
    """One lock file per environment in the system's temporary folder was never removed
    (142 after four hours of runs here): in a virtual environment it goes with it. An
    interpreter's own prefix (/usr, a conda base, root in a container) gets nothing written
    into it; there the lock file is the temporary folder's."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    prefix = tmp_path / "prefix"
    prefix.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(sys, "prefix", str(prefix))
    if not venv:
        monkeypatch.setattr(sys, "base_prefix", str(prefix))
    with watch_alone():
        pass
    in_prefix = [p.name for p in prefix.iterdir()]
    in_temp = [p.name for p in temp.glob("mlxcompat-watch-*.lock")]
    assert (in_prefix, len(in_temp)) == (([".mlxcompat-watch.lock"], 0) if venv else ([], 1))
