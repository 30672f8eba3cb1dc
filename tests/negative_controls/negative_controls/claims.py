"""Says it applied a patch and changes nothing (a self-report the harness must not trust)."""

from dataclasses import dataclass


@dataclass
class Status:
    status: str = "applied"
    detail: str = "patched everything"


def apply() -> Status:
    return Status()
