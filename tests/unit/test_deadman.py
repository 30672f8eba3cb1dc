"""The dead man's switch: a runner killed outright (SIGKILL) takes the subject processes it
held with it, frozen ones too; groups it let go of are left alone."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import subprocess
import sys
import textwrap

import pytest
from prockit import wait_for

from mlxcompat.deadman import held

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="POSIX signals")

RUNNER = textwrap.dedent("""
    import subprocess, sys, time
    from mlxcompat import deadman
    kept, let_go = (subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                     start_new_session=True) for _ in range(2))
    deadman.watch(kept.pid)
    deadman.watch(let_go.pid)
    deadman.forget(let_go.pid)
    print(kept.pid, let_go.pid, flush=True)
    time.sleep(600)
""")


def test_held_groups_follow_the_lines() -> None:
    assert held(["+12\n", "+13\n", "-12\n", "+14\n", "\n"]) == {13, 14}
    assert held([]) == set()


def test_a_runner_killed_outright_takes_its_frozen_subject_with_it() -> None:
    runner = subprocess.Popen([sys.executable, "-c", RUNNER], stdout=subprocess.PIPE,
                              text=True)
    kept, let_go = (int(p) for p in runner.stdout.readline().split())
    try:
        os.killpg(kept, signal.SIGSTOP)  # frozen for another's turn, as on a GPU backend
        assert wait_for(kept, "T", tries=200, pause=0.05) == "T"
        runner.kill()
        runner.wait(timeout=30)
        runner.stdout.close()
        assert wait_for(kept, "Zgone", tries=200, pause=0.05) in ("Z", "gone")
        assert wait_for(let_go, "Zgone", tries=20, pause=0.05) not in ("Z", "gone")
    finally:
        for pid in (kept, let_go):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)


@pytest.mark.parametrize(("device", "held_by_switch"), [("gpu", True), ("cpu", False)])
def test_a_spawned_subject_is_held_where_it_can_be_frozen(tmp_path, monkeypatch, device,
                                                          held_by_switch) -> None:
    from types import SimpleNamespace

    from mlxcompat import workers

    watched: list[int] = []
    monkeypatch.setattr(workers.deadman, "watch", watched.append)
    monkeypatch.delenv("MLXCOMPAT_BENCH_FREEZE", raising=False)
    monkeypatch.setattr(workers, "_spec", lambda *a: SimpleNamespace(
        write=lambda path: path))
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    real_popen = subprocess.Popen
    monkeypatch.setattr(workers.subprocess, "Popen",
                        lambda argv, **kw: real_popen(sleeper, **kw))
    opts = SimpleNamespace(bench=None, device=device, run=SimpleNamespace(pytest_args=[]))
    events: queue.Queue = queue.Queue()
    worker = workers._spawned(opts, SimpleNamespace(name="none"), tmp_path, None, events,
                              False, tmp_path / "none.json", dict(os.environ))
    try:
        assert watched == ([worker.proc.pid] if held_by_switch else [])
    finally:
        worker.proc.kill()
        worker.proc.wait()
        assert events.get(timeout=30)[0] == "eof"
        worker.proc.stdout.close()
