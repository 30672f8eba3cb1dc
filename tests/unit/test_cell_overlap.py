"""Cells that overlap: the bench lock between runners, keeping processes off the bench CPU,
and the nox side that hands a run on and still fails its cell when the run fails later."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from noxkit import FakeSession, venv_with

from mlxcompat import benchlock
from mlxcompat.cell_runs import CellRuns

pytestmark = pytest.mark.skipif(not benchlock.supported(), reason="Linux only (flock, affinity)")
HOLD = "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); " \
       "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(60)"


@pytest.fixture
def lock_file(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "bench.lock"
    monkeypatch.setenv("MLXCOMPAT_BENCH_LOCK", str(path))
    return path


def _holder(path: Path) -> subprocess.Popen[str]:
    proc = subprocess.Popen([sys.executable, "-c", HOLD, str(path)], stdout=subprocess.PIPE,
                            text=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "held"
    return proc


def test_a_lock_held_by_another_process_is_seen_and_waited_for(lock_file) -> None:
    holder = _holder(lock_file)
    try:
        assert benchlock.held_elsewhere()
        lock = benchlock.BenchLock()
        assert not lock.acquire(timeout_s=0.5)  # it stays taken: the caller gets False
    finally:
        holder.kill()
        holder.wait()
    assert not benchlock.held_elsewhere()  # the kernel dropped it with its process
    lock = benchlock.BenchLock()
    assert lock.acquire(timeout_s=1)
    assert lock.held
    lock.release()
    assert not lock.held


def test_waiting_for_the_bench_ends_when_its_holder_does_and_is_bounded(lock_file) -> None:
    """A server check retries a late group only once no other cell times its rounds."""
    assert benchlock.wait_free(30) < 0.5  # nobody holds it: no wait
    holder = _holder(lock_file)
    try:
        assert benchlock.wait_free(0.5) >= 0.5  # still held: the caller goes on after the limit
        threading.Timer(0.6, holder.kill).start()
        waited = benchlock.wait_free(30)
    finally:
        holder.kill()
        holder.wait()
    assert 0.5 <= waited < 10


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_confining_moves_free_processes_off_the_bench_cpu_and_leaves_pinned_ones(
        monkeypatch) -> None:
    every = set(os.sched_getaffinity(0))
    bench = max(every)
    monkeypatch.setenv("MLXCOMPAT_CPUS", ",".join(map(str, sorted(every))))
    free = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    pinned = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    os.sched_setaffinity(pinned.pid, {bench})
    try:
        others = benchlock.confine_tree(bench)
        assert others == every - {bench}
        assert os.sched_getaffinity(0) == others
        assert os.sched_getaffinity(free.pid) == others
        assert os.sched_getaffinity(pinned.pid) == {bench}
        assert benchlock.widen(others, every) >= 2  # this process and the free child
        assert os.sched_getaffinity(0) == every
        assert os.sched_getaffinity(free.pid) == every
        assert os.sched_getaffinity(pinned.pid) == {bench}
    finally:
        os.sched_setaffinity(0, every)
        for proc in (free, pinned):
            proc.kill()
            proc.wait()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_lock_holder_clears_the_bench_cpu_of_the_run_and_gives_it_back(monkeypatch) -> None:
    """Every process of the matrix run outside the holder's own tree leaves the bench CPU at
    once (not when it next looks), a pinned one keeps its pin, and all come back before the
    lock goes; init's tree is never touched."""
    every = set(os.sched_getaffinity(0))
    bench = max(every)
    monkeypatch.setenv("MLXCOMPAT_CPUS", ",".join(map(str, sorted(every))))
    sleep = [sys.executable, "-c", "import time; time.sleep(30)"]
    own, other, pinned = (subprocess.Popen(sleep) for _ in range(3))
    os.sched_setaffinity(pinned.pid, {bench})
    try:
        assert benchlock.clear_bench(bench, 1, own.pid) == {}
        moved = benchlock.clear_bench(bench, os.getpid(), own.pid)
        assert os.sched_getaffinity(other.pid) == every - {bench}
        assert os.sched_getaffinity(0) == every - {bench}  # the "nox" process itself
        assert os.sched_getaffinity(own.pid) == every
        assert os.sched_getaffinity(pinned.pid) == {bench}
        assert other.pid in moved and own.pid not in moved and pinned.pid not in moved
        benchlock.restore(moved, bench)
        assert os.sched_getaffinity(other.pid) == every
        assert os.sched_getaffinity(0) == every
        assert os.sched_getaffinity(pinned.pid) == {bench}
    finally:
        os.sched_setaffinity(0, every)
        for proc in (own, other, pinned):
            proc.kill()
            proc.wait()


def _handing_on(tmp_path: Path, seconds: float, code: int = 0) -> Path:
    """A venv whose run hands on at once (when asked to), then runs `seconds` more and exits
    with `code`."""
    return venv_with(tmp_path, f"""
        import os, pathlib, sys, time
        if "MLXCOMPAT_HANDOFF" in os.environ:
            pathlib.Path(os.environ["MLXCOMPAT_HANDOFF"]).write_text("x")
        time.sleep({seconds})
        sys.exit({code})
    """)


def test_a_run_handed_on_that_fails_later_fails_the_session_that_waits(tmp_path) -> None:
    venv = _handing_on(tmp_path, 0.5, code=3)
    runs = CellRuns()
    session = FakeSession(venv)
    started = time.monotonic()
    runs.start(session, "cell-a", ["fake-run"], {})
    assert time.monotonic() - started < 0.5 and len(runs.running) == 1  # handed on
    with pytest.raises(RuntimeError, match=r"cell-a \(exit 3\)"):
        runs.finish(session)
    assert runs.wait_all() == []  # named once


def test_a_run_that_fails_before_handing_on_fails_its_own_session(tmp_path) -> None:
    venv = venv_with(tmp_path, "import sys; sys.exit(2)\n")
    runs = CellRuns()
    with pytest.raises(RuntimeError, match="cell-b: mlxcompat run exited with 2"):
        runs.start(FakeSession(venv), "cell-b", ["fake-run"], {})
    assert runs.running == []


def test_a_run_in_the_session_that_fails_fails_its_session(tmp_path) -> None:
    """Not `session.run` any more, whose CommandFailed failed the session: the same must hold."""
    runs = CellRuns()
    with pytest.raises(RuntimeError, match="cell-c: mlxcompat run exited with 3"):
        runs.run_here(FakeSession(venv_with(tmp_path, "import sys; sys.exit(3)\n")), "cell-c",
                      ["fake-run"], {})
    assert runs.here is None


def test_no_more_than_two_runs_at_once(tmp_path) -> None:
    venv = _handing_on(tmp_path, 1.0)
    runs = CellRuns()
    session = FakeSession(venv)
    started = time.monotonic()
    runs.start(session, "one", ["fake-run"], {})
    runs.start(session, "two", ["fake-run"], {})
    assert time.monotonic() - started < 0.9
    runs.start(session, "three", ["fake-run"], {})  # waits for "one" to end first
    assert time.monotonic() - started >= 1.0
    assert [name for name, _ in runs.running] == ["two", "three"]
    assert runs.wait_all() == []


def test_the_next_run_starts_when_either_of_two_ends(tmp_path) -> None:
    """The older run still timing its rounds must not hold back the next cell once the
    younger one has ended: a CPU sat idle for 8 s of a full run (2026-12-07)."""
    venv = venv_with(tmp_path, """
        import os, pathlib, sys, time
        pathlib.Path(os.environ["MLXCOMPAT_HANDOFF"]).write_text("x")
        time.sleep(float(sys.argv[1]))
    """)
    runs = CellRuns()
    session = FakeSession(venv)
    runs.start(session, "older", ["fake-run", "3"], {})
    runs.start(session, "younger", ["fake-run", "0.3"], {})
    started = time.monotonic()
    runs.start(session, "next", ["fake-run", "0"], {})
    assert time.monotonic() - started < 2.0
    assert runs.running[0][0] == "older"
    assert runs.wait_all() == []


def test_a_gating_cell_runs_alone_after_every_run_handed_on_before_it(tmp_path) -> None:
    venv = _handing_on(tmp_path, 0.6)
    runs = CellRuns()
    session = FakeSession(venv)
    runs.launch(session, "quick", ["fake-run"], {}, overlap=True, gating=False)
    assert len(runs.running) == 1  # handed on
    started = time.monotonic()
    runs.launch(session, "gated", ["fake-run"], {}, overlap=True, gating=True)
    assert time.monotonic() - started >= 0.6  # it waited for the run before it, then its own
    assert runs.running == [] and runs.here is None
    runs.launch(session, "off", ["fake-run"], {}, overlap=False, gating=False)
    assert runs.running == [] and session.errors == []


def test_a_run_interrupted_before_handing_on_is_waited_for_and_named_so(tmp_path,
                                                                        monkeypatch) -> None:
    """Ctrl-C reaches nox while it waits for a run to hand on: nox's exit waits for that run
    (it was not yet in the list, so nox ended before the run's own cleanup), and a run that
    ended on Ctrl-C is named interrupted, not failed."""
    from mlxcompat import cell_runs

    venv = venv_with(tmp_path, "import time, sys; time.sleep(0.4); sys.exit(130)\n")
    runs = CellRuns()
    seen: list[int] = []

    def interrupted(seconds: float) -> None:
        seen.append(len(runs.running))
        raise KeyboardInterrupt

    monkeypatch.setattr(cell_runs.time, "sleep", interrupted)
    with pytest.raises(KeyboardInterrupt):
        runs.start(FakeSession(venv), "cell-b", ["fake-run"], {})
    monkeypatch.undo()
    assert seen == [1]  # already waited for while nox was still waiting for the hand-on
    assert runs.wait_all() == ["cell-b (interrupted)"]
