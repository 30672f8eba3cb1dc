"""A `server` check's server forked warm by the cell's fork server (`mlxcompat.forkserver`),
with the slice of `subprocess.Popen` that `drivers.server.Server` uses.

Starting `mlx_lm.server` cold costs ~3 CPU-s on this machine's CPUs, over 2 s of it importing
transformers, huggingface_hub and numpy (`python -X importtime -c "import mlx_lm.server"`);
the fork server has imported those once, and nothing of mlx. The child then runs
`mlxcompat.serve` as a fresh process would: the subject's entry points first, then
`mlx_lm.server`. Used where the subject process was itself forked (`MLXCOMPAT_FORK_SOCKET`
in its environment); elsewhere servers start as plain processes.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Iterator
from pathlib import Path

SOCKET_ENV = "MLXCOMPAT_FORK_SOCKET"
SCRATCH_ENV = "MLXCOMPAT_SCRATCH"  # the runner's temporary folder, named to its subjects


def available() -> bool:
    return bool(os.environ.get(SOCKET_ENV)) and os.environ.get("MLXCOMPAT_FORK", "1") != "0"


def scratch() -> str | None:
    """Where a subject process makes its temporary folders: inside its runner's own (which
    the runner removes however the subject ended: a subject killed outright, by Ctrl-C or a
    cell's timeout, removes nothing itself), else the system's."""
    folder = os.environ.get(SCRATCH_ENV, "")
    return folder if folder and os.path.isdir(folder) else None


class ForkedServer:
    """A server forked for this process: its output through a fifo, its exit through the
    connection that asked for it."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self._folder = Path(tempfile.mkdtemp(prefix="mlxcompat-served-", dir=scratch()))
        # its fifo's folder goes when the server ends, and at this process's exit if it
        # never saw the end (a subject that exits with its servers still running)
        self._cleanup = weakref.finalize(self, shutil.rmtree, self._folder, True)
        self._out = self._folder / "out"
        os.mkfifo(self._out)
        self.returncode: int | None = None
        self._ended = threading.Event()
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._conn.connect(os.environ[SOCKET_ENV])
        request = {"argv": argv, "env": env, "out": str(self._out), "serve": True}
        self._conn.sendall((json.dumps(request) + "\n").encode())
        self._answers = self._conn.makefile("r", encoding="utf-8")
        line = self._answers.readline()
        if not line:
            raise RuntimeError("the fork server did not fork a server")
        self.pid = int(json.loads(line)["pid"])
        threading.Thread(target=self._wait_exit, daemon=True).start()

    @property
    def stdout(self) -> Iterator[str]:
        """The server's output lines (stdout and stderr), until it ends."""
        with open(self._out, encoding="utf-8", errors="replace") as stream:
            yield from stream

    def _wait_exit(self) -> None:
        line = ""
        with contextlib.suppress(OSError):
            line = self._answers.readline()
        self.returncode = int(json.loads(line)["code"]) if line else -9
        self._conn.close()
        self._cleanup()  # before `wait` returns: the process may exit right after it
        self._ended.set()

    def poll(self) -> int | None:
        return self.returncode

    def send_signal(self, sig: int) -> None:
        """As `subprocess.Popen.send_signal`: nothing once the server has ended."""
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def wait(self, timeout: float | None = None) -> int:
        if not self._ended.wait(timeout):
            raise subprocess.TimeoutExpired("forked server", timeout or 0)
        return int(self.returncode if self.returncode is not None else -9)
