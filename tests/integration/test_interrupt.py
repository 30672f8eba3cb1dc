"""Ctrl-C in the middle of the `server` check leaves nothing behind: a real `mlxcompat run`
in this environment (its fork server, subjects and their real `mlx_lm.server` pairs, one of
each pair paused), SIGINT to its process group as a terminal sends it once the first
model's server rows are in. Before (2026-12-07), a paused server stayed stopped and
listening for good, its fork server waited for it for good, and the runner's temporary
folder stayed behind when nox cut its cleanup short (that part: test_cell_overlap.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def _marked(mark: str) -> list[int]:
    """Processes whose environment carries `mark` (every process the run started does):
    the same reading as `scripts/interrupt_run.py`, which a user runs by hand."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("interrupt_run",
                                                  ROOT / "scripts" / "interrupt_run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return list(module.marked(mark))


def test_ctrl_c_during_the_server_check_leaves_no_process_and_no_folder(tmp_path) -> None:
    pytest.importorskip("mlx_lm.server")
    temp = tmp_path / "temp"
    temp.mkdir()
    mark = f"mlxcompat-interrupt-{uuid.uuid4().hex}"
    out = tmp_path / "cell.json"
    env = {**os.environ, "TMPDIR": str(temp), "MLXCOMPAT_TEST_MARK": mark,
           "HF_HUB_OFFLINE": "1", "MLXCOMPAT_OVERLAP": "0"}
    run = subprocess.Popen(
        [sys.executable, "-m", "mlxcompat.cli", "--matrix", str(ROOT / "matrix.yaml"), "run",
         "--cell", "local", "--out", str(out), "--subjects", "none,mlxcompat",
         "--models", "llama,mamba", "--checks", "install,import,server", "--bench", "off"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    lines: list[str] = []
    first_rows = threading.Event()

    def read() -> None:  # a thread: a run that hangs must fail the test, not hang it
        assert run.stdout is not None
        for line in run.stdout:
            lines.append(line)
            if ": server llama: " in line:
                first_rows.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert first_rows.wait(timeout=600), "".join(lines[-20:])
        os.killpg(run.pid, signal.SIGINT)
        assert run.wait(timeout=60) == 130, "".join(lines[-20:])
        reader.join(timeout=30)  # the pipe's end: no process of the run holds it any more
        assert not reader.is_alive(), "a process of the run still holds its output"
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.wait()
    assert "interrupted; its subject processes were stopped" in "".join(lines[-5:])
    assert "Traceback" not in "".join(lines)
    assert not out.exists()
    left: list[int] = []
    for _ in range(50):  # a killed process may take a moment to be reaped
        left = _marked(mark)
        if not left:
            break
        time.sleep(0.1)
    assert left == [], [Path(f"/proc/{p}/cmdline").read_bytes() for p in left]
    assert [p.name for p in temp.iterdir() if p.name.startswith("mlxcompat")
            and not p.name.startswith("mlxcompat-bench-")] == []  # the one lock every run shares
