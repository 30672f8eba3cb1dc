"""The runner's freeze of waiting subjects: which backends get it, and that it really stops
and resumes a process group (a real child process, no fakes)."""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.workers import freeze_policy

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@dataclass
class Held:
    proc: Any


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _wait_for(pid: int, states: str) -> str:
    for _ in range(100):
        state = _state(pid)
        if state in states:
            return state
        time.sleep(0.02)
    return _state(pid)


def test_policy_by_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_BENCH_FREEZE", raising=False)
    assert freeze_policy("cpu") is None
    assert freeze_policy("gpu") is not None
    monkeypatch.setenv("MLXCOMPAT_BENCH_FREEZE", "1")
    assert freeze_policy("cpu") is not None
    monkeypatch.setenv("MLXCOMPAT_BENCH_FREEZE", "0")
    assert freeze_policy("gpu") is None


def test_freeze_stops_and_thaw_resumes_the_process_group(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_BENCH_FREEZE", raising=False)
    hold = freeze_policy("gpu")
    assert hold is not None
    freeze, thaw = hold
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.readline()"],
                            stdin=subprocess.PIPE, start_new_session=True)
    try:
        assert _wait_for(proc.pid, "S") == "S"
        freeze(Held(proc))
        assert _wait_for(proc.pid, "T") == "T"
        thaw(Held(proc))
        assert _wait_for(proc.pid, "SRD") in "SRD"  # D: running, between disk reads
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()
