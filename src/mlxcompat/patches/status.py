"""The patch-status object every entry point of ours returns."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, Literal

Status = Literal["applied", "skipped", "not-applicable", "unavailable", "error"]


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
