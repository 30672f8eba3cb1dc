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
