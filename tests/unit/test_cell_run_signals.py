"""A SIGINT or SIGTERM that reaches nox alone (`kill PID`, a CI step that `exec`s nox) stops
the cell runs nox started, handed on or not, and gives each time to clean up. Before
(2026-12-07), nox waited for handed-on runs to finish their cells (20 s after a SIGINT 80 s
into a full matrix), left them running after a SIGTERM, and its in-session run heard of
neither until nox's own interrupt timeout ran out. Real child processes; nox's session is
noxkit's FakeSession."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest
from noxkit import FakeSession, venv_with

from mlxcompat.cell_runs import CellRuns

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

# A run that says it is ready (and hands on when asked), cleans up for 0.3 s on SIGINT or
# SIGTERM, notes which signal it got and exits as `mlxcompat run` does: 130 or 143.
RUN = """
import os, pathlib, signal, sys, time
note = pathlib.Path(sys.argv[1])
def stop(signum, frame):
    time.sleep(0.3)
    note.write_text(str(signum))
    sys.exit(130 if signum == signal.SIGINT else 143)
signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)
pathlib.Path(str(note) + ".ready").write_text("")
if "MLXCOMPAT_HANDOFF" in os.environ:
    pathlib.Path(os.environ["MLXCOMPAT_HANDOFF"]).write_text("x")
time.sleep(60)
"""


@pytest.fixture
def handlers():
    """This test process's handlers back as they were: the tests install nox's."""
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _signal_self_when_ready(note: Path, sig: int) -> None:
    """Signal this process alone (not its group) once the run is ready for it."""
    def send() -> None:
        for _ in range(600):
            if Path(str(note) + ".ready").exists():
                break
            time.sleep(0.05)
        os.kill(os.getpid(), sig)

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.parametrize(("sig", "raised"), [(signal.SIGINT, KeyboardInterrupt),
                                             (signal.SIGTERM, SystemExit)],
                         ids=["sigint", "sigterm"])
def test_a_signal_to_nox_alone_reaches_the_run_it_waits_for(tmp_path, handlers, sig,
                                                            raised) -> None:
    note = tmp_path / "note"
    session = FakeSession(venv_with(tmp_path, RUN))
    runs = CellRuns()
    runs.pass_signals_on()
    started = time.monotonic()
    with pytest.raises(raised):
        _signal_self_when_ready(note, sig)
        runs.launch(session, "off", ["fake-run", str(note)], {}, overlap=False, gating=False)
    assert time.monotonic() - started < 20  # not the run's 60 s, nor nox's 30 s grace
    assert note.read_text() == str(int(sig))  # it heard of it and finished its cleanup
    assert runs.here is None and runs.stopping


@pytest.mark.parametrize(("sig", "raised", "word"), [
    (signal.SIGINT, KeyboardInterrupt, "interrupted"),
    (signal.SIGTERM, SystemExit, "terminated")], ids=["sigint", "sigterm"])
def test_a_signal_to_nox_alone_stops_a_run_handed_on(tmp_path, handlers, capsys, sig, raised,
                                                     word) -> None:
    note = tmp_path / "note"
    session = FakeSession(venv_with(tmp_path, RUN))
    runs = CellRuns()
    runs.pass_signals_on()
    runs.start(session, "cell-a", ["fake-run", str(note)], {})
    assert len(runs.running) == 1  # handed on: nox goes on to the next cell
    with pytest.raises(raised):  # the run is ready: the signal may come at once
        _signal_self_when_ready(note, sig)
        time.sleep(30)  # nox, busy elsewhere
    started = time.monotonic()
    runs._at_exit()  # what nox's exit does
    assert time.monotonic() - started < 10
    assert note.read_text() == str(int(sig))
    assert runs.running == []
    assert f"cell-a ({word}): its run did not end with its results" in capsys.readouterr().out


def test_without_a_signal_nox_exit_still_waits_for_runs_to_end(tmp_path, handlers) -> None:
    """Stopping is only for a signal: a normal exit lets a handed-on run finish its cell."""
    venv = venv_with(tmp_path, """
        import os, pathlib, sys, time
        pathlib.Path(os.environ["MLXCOMPAT_HANDOFF"]).write_text("x")
        time.sleep(0.5)
        pathlib.Path(sys.argv[1]).write_text("done")
    """)
    runs = CellRuns()
    runs.pass_signals_on()
    runs.start(FakeSession(venv), "cell-a", ["fake-run", str(tmp_path / "note")], {})
    runs._at_exit()
    assert (tmp_path / "note").read_text() == "done"


def test_a_signal_nox_was_started_to_ignore_stays_ignored(handlers) -> None:
    """`nox ... &` in a script: SIGINT ignored, as the shell set it; nox must not take it up."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    CellRuns().pass_signals_on()
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert signal.getsignal(signal.SIGTERM) != signal.SIG_DFL  # this one it takes up
