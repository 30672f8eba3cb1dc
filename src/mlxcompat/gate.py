"""Turn-taking between subject processes, so throughput rounds are exclusive and paired.

Every subject runs in a long-lived process of its own (patches are process state). Before a
timed round a worker asks for a turn and blocks until the coordinator (the runner) grants
it; after the round it says done. The coordinator grants one turn at a time, only once
every live worker is waiting, and rotates the order each cycle, so rounds of subjects A B C
run as A B C, B C A, ... with nothing else running beside them.

Wire format, one line each: worker -> coordinator `want <label>` / `done <label>`;
coordinator -> worker `go`.
"""

from __future__ import annotations

import os
from typing import IO


class Gate:
    """The worker side. Without file descriptors (a run by hand) every turn is granted."""

    def __init__(self, read_fd: int | None = None, write_fd: int | None = None) -> None:
        self._in: IO[str] | None = os.fdopen(read_fd, "r") if read_fd is not None else None
        self._out: IO[str] | None = os.fdopen(write_fd, "w") if write_fd is not None else None
        self.label = ""

    def turn(self, label: str) -> None:
        """Block until this worker may run its next timed round."""
        self.label = label
        if self._out is None or self._in is None:
            return
        self._out.write(f"want {label}\n")
        self._out.flush()
        reply = self._in.readline().strip()
        if reply != "go":
            raise RuntimeError(f"bench coordinator answered {reply!r} instead of 'go'")

    def done(self) -> None:
        if self._out is not None:
            self._out.write(f"done {self.label}\n")
            self._out.flush()


def gate_from(fds: list[int]) -> Gate:
    return Gate(fds[0], fds[1]) if len(fds) == 2 else Gate()
