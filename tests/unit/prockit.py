"""A process's state letter from /proc (R, S, D, T, Z), for tests that freeze and kill real
processes; "gone" once it has no /proc entry."""

from __future__ import annotations

import time
from pathlib import Path


def state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def wait_for(pid: int, states: str, tries: int = 100, pause: float = 0.02) -> str:
    """The state once it is one of `states`, or the last one seen after `tries` looks."""
    for _ in range(tries):
        found = state(pid)
        if found in states:
            return found
        time.sleep(pause)
    return state(pid)
