"""A check's result: one `ResultRow` per collected case, the same shape from the plugin to
the report (which adds where it ran and how it was judged: `report.ReportRow`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import Field

from mlxcompat.records.base import Record
from mlxcompat.records.names import KEYS, Verdict


@dataclass(frozen=True, order=True)
class About:
    """What a row is about, beside cell and subject: its check and the keys that apply."""

    check: str
    model: str = ""
    mode: str = ""
    role: str = ""
    scenario: str = ""
    path: str = ""
    test: str = ""
    dtype: str = ""

    @property
    def variant(self) -> str:
        """The part beside check and model: a mode, role, scenario/path or test (and the
        dtype where it is not float32)."""
        scenario = "/".join(p for p in (self.scenario, self.path) if p)
        return " ".join(p for p in (self.mode, self.role, scenario, self.test, self.dtype) if p)

    @property
    def text(self) -> str:
        return " ".join(p for p in (self.check, self.model, self.variant) if p)


class ResultRow(Record):
    """One verdict of one check for one subject, with its Δ where it compared scores."""

    check: str
    subject: str
    verdict: Verdict
    model: str = ""
    mode: str = ""
    role: str = ""
    scenario: str = ""
    path: str = ""
    test: str = ""
    dtype: str = ""  # "" = float32; bfloat16, float16, q4 (4-bit weights)
    delta: float | None = None  # max |Δ| of scores up to the first differing token
    tokens_equal: bool | None = None
    detail: str = ""
    metrics: dict[str, Any] = Field(default_factory=dict)  # check-specific details
    seconds: float = 0.0
    reused: bool = False
    # The subject whose run in this cell measured it, for a subject whose entry points were
    # observed to change nothing (`mlxcompat.borrow`); "" for a row of its own run.
    borrowed_from: str = ""

    @property
    def about(self) -> About:
        return About(self.check, *(str(getattr(self, k)) for k in KEYS))

    def key(self) -> tuple[str, ...]:
        """Identity within a cell: check, the keys, subject."""
        return (self.check, *(str(getattr(self, k)) for k in KEYS), self.subject)

    @classmethod
    def error(cls, check: str, subject: str, detail: str, **keys: Any) -> ResultRow:
        return cls(check=check, subject=subject, verdict="error", detail=detail, **keys)
