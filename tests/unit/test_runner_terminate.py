"""A runner stopped by SIGTERM (timeout(1), a cancelled job) ends every subject process it
holds, frozen ones included, and writes no cell document. Real processes, no fakes: before
the fix, subjects frozen for another's turn stayed stopped for good (an H100, 2026-12-06)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections import deque
from types import SimpleNamespace

import pytest
from prockit import state, wait_for

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

SELF_TERM = """
import os, signal, time
from mlxcompat.workers import stop_signals
try:
    with stop_signals():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(10)
    print("no exit")
except SystemExit as exc:
    print("exit", exc.code)
print("handler restored", signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


SECOND_SIGNAL = """
import os, signal, sys, time
from mlxcompat.workers import stop_signals
first = getattr(signal, sys.argv[1])
try:
    with stop_signals():
        try:
            os.kill(os.getpid(), first)
            time.sleep(10)
        finally:  # the runner's cleanup: a second signal of either kind must not cut it short
            os.kill(os.getpid(), signal.SIGINT)
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
            print("cleanup done")
except BaseException as exc:
    print("stopped", type(exc).__name__)
print("restored", signal.getsignal(signal.SIGINT) is signal.default_int_handler,
      signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
"""


def _opts(tmp_path, monkeypatch, device: str, fork: bool) -> SimpleNamespace:
    """A one-subject cell's options, with no bench lock taken by a unit test and the fork
    server on or off."""
    from mlxcompat import runner

    monkeypatch.setenv("MLXCOMPAT_OVERLAP", "0")
    if not fork:
        monkeypatch.setattr(runner.forkserver, "available", lambda: False)
    run = SimpleNamespace(last_seconds={}, same_as={}, name="cell")
    return SimpleNamespace(out=tmp_path / "cell.json", subjects=[SimpleNamespace(name="none")],
                           reused=(), run=run, need_probe=False, device=device)


def test_sigterm_inside_becomes_system_exit_and_the_handler_is_restored() -> None:
    out = subprocess.run([sys.executable, "-c", SELF_TERM], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split("\n")
    assert out[:2] == ["exit 143", "handler restored True"]


@pytest.mark.parametrize(("first", "stopped"), [("SIGINT", "KeyboardInterrupt"),
                                                 ("SIGTERM", "SystemExit")])
def test_a_second_signal_does_not_cut_the_cleanup_short(first: str, stopped: str) -> None:
    """Ctrl-C pressed twice, or nox passing on a signal the runner's group got as well: the
    second one used to stop the cleanup mid-way and leave the runner's folder behind."""
    out = subprocess.run([sys.executable, "-c", SECOND_SIGNAL, first], capture_output=True,
                         text=True, timeout=60, check=True).stdout.split("\n")
    assert out[:3] == ["cleanup done", f"stopped {stopped}", "restored True True"]


@pytest.mark.parametrize(("stop", "device"), [
    (SystemExit(128 + signal.SIGTERM), "gpu"),  # what stop_signals makes of SIGTERM
    (KeyboardInterrupt(), "cpu"),
], ids=["sigterm", "ctrl-c"])
def test_a_stopped_run_kills_its_frozen_subject_writes_nothing_and_removes_its_folder(
        tmp_path, monkeypatch, stop: BaseException, device: str) -> None:
    """SIGTERM and Ctrl-C take one way out: no subject left stopped (before, subjects frozen
    for another's turn stayed stopped for good: an H100, 2026-12-06), no cell document, and
    the runner's temporary folder (its subjects' scratch) removed."""
    import tempfile

    from mlxcompat import runner
    from mlxcompat.workers import Worker

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             start_new_session=True)
    seen: list = []

    def loop(opts, tmp, need, events, workers, todo, server, share):
        seen.append(tmp)
        (tmp / "mlxcompat-serve-x").mkdir()  # what a subject made there
        os.killpg(child.pid, signal.SIGSTOP)  # frozen for another subject's turn
        workers["none"] = Worker("none", child, tmp / "none.json", deque())
        raise stop

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(runner, "_loop", loop)
    opts = _opts(tmp_path, monkeypatch, device, fork=False)
    try:
        with pytest.raises(type(stop)) as stopped:
            runner.run_cell(opts)
        if isinstance(stop, SystemExit):
            assert stopped.value.code == 143
        assert child.wait(timeout=30) == -signal.SIGKILL
        assert state(child.pid) == "gone"
        assert not opts.out.exists()
        assert seen and seen[0].parent == temp and list(temp.iterdir()) == []
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()


def test_ctrl_c_right_after_a_fork_kills_the_subject_the_runner_never_heard_of(tmp_path,
                                                                                monkeypatch):
    """Ctrl-C between the fork server's fork and the runner's note of it: that subject was
    in no worker entry, so nothing killed it, and an orderly close waited for it. Stopping,
    the runner ends the fork server's stdin instead, which kills every child it forked."""
    from mlxcompat import forkserver, runner

    if not forkserver.available():
        pytest.skip("the fork server is Linux-only")
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(120)\n")
    forked: list[int] = []

    def loop(opts, tmp, need, events, workers, todo, server, share):
        fifo = tmp / "sleeper.out"
        os.mkfifo(fifo)
        import threading

        threading.Thread(target=fifo.read_text, daemon=True).start()
        child = server.fork([], {**os.environ, "PYTHONPATH": str(tmp_path)}, str(fifo),
                            module="sleeper")
        forked.append(child.pid)
        raise KeyboardInterrupt  # before `workers[...] = ...`

    monkeypatch.setattr(runner, "_loop", loop)
    opts = _opts(tmp_path, monkeypatch, "cpu", fork=True)
    monkeypatch.setattr(runner, "subject_env", lambda *a: dict(os.environ))
    try:
        with pytest.raises(KeyboardInterrupt):
            runner.run_cell(opts)
        assert forked and wait_for(forked[0], "gone Z", tries=100, pause=0.05) in ("gone", "Z")
    finally:
        for pid in forked:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
