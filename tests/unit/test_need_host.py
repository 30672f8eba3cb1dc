"""Who runs the need probe: never a process whose rounds are timed (the probe's leftovers
slowed `none`, the reference of every paired overhead: reports/evidence/aa-processes*)."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from mlxcompat import forkserver
from mlxcompat.forkclient import Events, ForkServer, kill
from mlxcompat.matrix import SubjectSpec
from mlxcompat.runner import _mark_need_done, _need_record, need_host
from mlxcompat.turns import TurnOrder
from mlxcompat.workers import NEED_PROBE, handle, start_need_probe

SUBJECTS = [SubjectSpec("mlxcompat"), SubjectSpec("none"), SubjectSpec("twin")]


def test_none_hosts_the_probe_only_where_no_round_is_timed() -> None:
    host = need_host(SUBJECTS, Path("need.json"), None)
    assert host is not None and host.name == "none"
    assert need_host(SUBJECTS, Path("need.json"), object()) is None


def test_no_host_without_none_or_without_a_probe() -> None:
    assert need_host(SUBJECTS[::2], Path("need.json"), None) is None
    assert need_host(SUBJECTS, None, None) is None


def _wait_until_it_writes_to(pid: int, fifo: Path) -> None:
    """Until the child has its own session and its output on the FIFO: killed before that,
    it escapes `kill` (no process group yet) or leaves the reader blocked in open (a child
    that dies before opening its FIFO is seen only at the cell's deadline)."""
    for _ in range(600):
        with contextlib.suppress(OSError):
            if os.getsid(pid) == pid and os.readlink(f"/proc/{pid}/fd/1") == str(fifo):
                return
        time.sleep(0.01)
    raise AssertionError("the forked need probe never opened its output")


@pytest.mark.skipif(not forkserver.available(), reason="fork server is Linux-only")
def test_a_need_probe_killed_in_its_own_process_fails_closed(tmp_path: Path) -> None:
    """The need probe forked warm, then killed before it writes: the cell's need record is an
    error naming the kill, never an empty record that would read as 'nothing needed'."""
    opts = SimpleNamespace(device="cpu", force_cpu=())
    out = tmp_path / "need.json"
    events: Events = queue.Queue()
    server = ForkServer({**os.environ, "HF_HUB_OFFLINE": "1"})
    try:
        worker = start_need_probe(opts, out, events, server)  # type: ignore[arg-type]
        _wait_until_it_writes_to(worker.proc.pid, out.with_suffix(".out"))
        kill(worker.proc)
        while not worker.exited:
            handle("cell", events.get(timeout=60), {NEED_PROBE: worker}, TurnOrder())
    finally:
        server.close()
    assert worker.code == -signal.SIGKILL and not out.exists()
    _mark_need_done(out, worker)
    record = _need_record(out)
    assert f"exited with {-signal.SIGKILL} before writing its record" in record.error
