"""The runner's freeze of waiting subjects: which backends get it, and that it really stops
and resumes a process group (a real child process, no fakes)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from typing import Any

import pytest
from prockit import wait_for

from mlxcompat.workers import freeze_policy

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


@dataclass
class Held:
    proc: Any


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
        assert wait_for(proc.pid, "S") == "S"
        freeze(Held(proc))
        assert wait_for(proc.pid, "T") == "T"
        thaw(Held(proc))
        assert wait_for(proc.pid, "SRD") in "SRD"  # D: running, between disk reads
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.flush()
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()
