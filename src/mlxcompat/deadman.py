"""A dead man's switch for the subject processes a runner spawns itself (macOS, or
MLXCOMPAT_FORK=0; on Linux the fork server does this for its children).

A subject frozen for another's turn (SIGSTOP, on a GPU backend) cannot notice that its runner
died: a runner killed outright (SIGKILL, the OOM killer) runs no cleanup, and the subject
stayed stopped for good, holding its GPU memory. So the runner hands each frozen-capable
subject's process group to this process (stdlib only, its own session); when the pipe from
the runner ends, however the runner went, every group still held is SIGKILLed (which ends a
stopped process too). Lines on stdin: `+PID` holds a group, `-PID` lets it go.

    python -m mlxcompat.deadman    # started by `watch`, never by hand
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from typing import Any

_LOCK = threading.Lock()
_SWITCH: list[Any] = []  # the runner's one switch process, started by the first `watch`


def watch(pid: int) -> None:
    """SIGKILL `pid`'s process group should this process die before `forget(pid)`."""
    with _LOCK:
        if not _SWITCH or _SWITCH[0].poll() is not None:
            _SWITCH[:] = [subprocess.Popen([sys.executable, "-m", "mlxcompat.deadman"],
                                           stdin=subprocess.PIPE, text=True,
                                           start_new_session=True)]
        _send(f"+{pid}")


def forget(pid: int) -> None:
    """`pid` ended (or was killed) here: its group id may be reused, so let it go."""
    with _LOCK:
        if _SWITCH and _SWITCH[0].poll() is None:
            _send(f"-{pid}")


def _send(line: str) -> None:
    with contextlib.suppress(OSError):
        _SWITCH[0].stdin.write(line + "\n")
        _SWITCH[0].stdin.flush()


def held(lines: Iterable[str]) -> set[int]:
    """The groups still held once `lines` end."""
    groups: set[int] = set()
    for line in lines:
        word = line.strip()
        if word[:1] == "+":
            groups.add(int(word[1:]))
        elif word[:1] == "-":
            groups.discard(int(word[1:]))
    return groups


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the runner's to handle
    for pid in held(sys.stdin):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)


if __name__ == "__main__":
    main()
