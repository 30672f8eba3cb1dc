"""The patch-status object every entry point of ours returns, and the `replaced` status.

Vocabulary: `applied` (our objects are installed, every one), `skipped` (the installed code
needs nothing), `not-applicable` (no target module), `unavailable` (the contract's word for
"cannot run here"; our entry points do not use it), `error` (raised, or needed and not
installed), and `replaced`: we installed our objects and at least one of them is no longer
what the target holds (another patch sits on top of ours, or something put the original
back). `replaced` is read from the targets by identity, never from a marker, and is not
truthy: we no longer vouch for batching there.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

from mlxcompat.patches.journal import Journal, describe

Status = Literal["applied", "skipped", "not-applicable", "unavailable", "replaced", "error"]


@dataclass(frozen=True)
class PatchStatus:
    """What an entry point did and why, in DESIGN's patch-status vocabulary."""

    patch: str
    status: Status
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def __bool__(self) -> bool:
        return self.status in ("applied", "skipped")


def replaced(patch: str, journal: Journal) -> PatchStatus | None:
    """`replaced`, naming each target that no longer holds ours and what it holds now; None
    while every replacement in the journal is still installed."""
    standings = journal.standings()
    lost = [(e, s) for e, s in standings if s != "ours"]
    if not lost:
        return None
    parts = []
    for entry, standing in lost:
        if standing == "foreign":
            parts.append(f"{entry.label} now holds {describe(entry.current())}")
        else:
            parts.append(f"{entry.label} holds its original again")
    kept = [e.label for e, s in standings if s == "ours"]
    tail = f"; still ours: {', '.join(kept)}" if kept else ""
    return PatchStatus(patch, "replaced", "replaced by another patch: " + "; ".join(parts)
                       + tail + " (unpatch() and apply again to put ours on top)")
