"""The runner's side of the fork server (`mlxcompat.forkserver`) and of every subject
process it starts: the children it forks, pumping their output into the cell's event queue,
and killing a process group (a frozen subject included)."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

Events = queue.Queue[tuple[str, str, str]]


class ForkedProcess:
    """A subject process forked by the fork server: the slice of Popen the runner uses."""

    def __init__(self, pid: int, out: str = "") -> None:
        self.pid = pid
        self.returncode: int | None = None
        self._ended = threading.Event()
        self.out = out  # its output FIFO
        self.reading = threading.Event()  # the runner's reader has the FIFO open

    def ended(self, code: int) -> None:
        self.returncode = code
        self._ended.set()
        if self.out and not self.reading.is_set():
            threading.Thread(target=_release_reader, args=(self.out, self.reading),
                             daemon=True).start()

    def wait(self, timeout: float | None = 30) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("forked subject", timeout or 0)
        return int(self.returncode if self.returncode is not None else -9)


def _release_reader(fifo: str, reading: threading.Event, tries: int = 500) -> None:
    """A child that ended before opening its FIFO leaves the runner's reader blocked in
    open, so its end would be seen only at the cell's deadline: open the FIFO's other end
    once the reader waits there, then close it, and the reader gets its end of file."""
    for _ in range(tries):
        if reading.is_set():
            return
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            return
        except OSError:  # no reader waiting yet (ENXIO), or the FIFO is gone
            time.sleep(0.01)


class ForkServer:
    """The runner's side of `mlxcompat.forkserver` (one per cell)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"], env=env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self._lock = threading.Lock()
        self._pids: queue.Queue[int] = queue.Queue()
        self._children: dict[int, ForkedProcess] = {}
        ready = json.loads(self.proc.stdout.readline() or "{}")  # type: ignore[union-attr]
        if "ready" not in ready:
            raise RuntimeError("the fork server did not start")
        self.socket = str(ready["socket"])  # where its subjects ask for their servers
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout:  # type: ignore[union-attr]
            message = json.loads(line)
            if "pid" in message:
                self._pids.put(message["pid"])
            elif "exit" in message:
                child = self._children.get(message["exit"])
                if child is not None:
                    child.ended(message["code"])
        for child in self._children.values():  # the server is gone: so are its children
            if child.returncode is None:
                child.ended(-9)

    def fork(self, argv: list[str], env: dict[str, str], out: str,
             module: str = "") -> ForkedProcess:
        """A child running pytest with `argv`, or `python -m module` with it."""
        with self._lock:
            env = {**env, "MLXCOMPAT_FORK_SOCKET": self.socket}
            request = {"argv": argv, "env": env, "out": out,
                       **({"module": module} if module else {})}
            self.proc.stdin.write(json.dumps(request) + "\n")  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
            child = ForkedProcess(self._pids.get(timeout=60), out)
            self._children[child.pid] = child
            return child

    def abandon(self) -> None:
        """The runner is stopping (Ctrl-C, SIGTERM): end the server's stdin without
        {"close": true}, so that it SIGKILLs every child it forked, one the runner never
        heard of included (forked a moment before the interrupt, its pid not yet read)."""
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()  # type: ignore[union-attr]
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=30)

    def close(self) -> None:
        """An orderly end: the server waits for its children (a bare end of stdin, the
        runner's death, makes it kill them)."""
        with contextlib.suppress(OSError, ValueError):
            with self._lock:
                self.proc.stdin.write(json.dumps({"close": True}) + "\n")  # type: ignore[union-attr]
            self.proc.stdin.close()  # type: ignore[union-attr]
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            kill(self.proc)


def pump(stream: Any, worker: str, events: Events, kind: str) -> None:
    for line in stream:
        events.put((kind, worker, line.rstrip("\n")))
    if kind == "out":
        events.put(("eof", worker, ""))


def read_fifo(path: Path, name: str, events: Events, proc: ForkedProcess) -> None:
    """Pump a forked child's output FIFO into `events` (its end of file: the child's exit)."""
    def read_output() -> None:
        with open(path, encoding="utf-8", errors="replace") as stream:
            proc.reading.set()
            pump(stream, name, events, "out")

    threading.Thread(target=read_output, daemon=True).start()


def kill(proc: Any) -> None:
    """SIGKILL to the process group: it ends a frozen (stopped) process too."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
