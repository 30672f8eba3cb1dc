"""Subjects of a cell share one environment: their watch windows take turns, so a file one
subject's import writes is never charged to another's entry point (CI saw vMLX's
deepseek_v3.py land in Rapid-MLX's idempotence row when the two ran side by side)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

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


def test_the_lock_file_lives_in_the_environment(tmp_path, monkeypatch) -> None:
    """One lock file per environment in the system's temporary folder was never removed
    (142 after four hours of runs here); in the environment it goes with it."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    env = tmp_path / "venv"
    env.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(sys, "prefix", str(env))
    with watch_alone():
        pass
    assert (env / ".mlxcompat-watch.lock").exists() and list(temp.iterdir()) == []


def test_an_interpreters_own_prefix_gets_no_lock_file(tmp_path, monkeypatch) -> None:
    """Not a virtual environment (/usr, a conda base, root in a container): nothing is
    written there; the lock file is the system temporary folder's."""
    import tempfile

    temp = tmp_path / "temp"
    temp.mkdir()
    base = tmp_path / "usr"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(sys, "prefix", str(base))
    monkeypatch.setattr(sys, "base_prefix", str(base))
    with watch_alone():
        pass
    assert list(base.iterdir()) == [] and len(list(temp.glob("mlxcompat-watch-*.lock"))) == 1
