"""What applying an entry point did, as the harness observed it (`subjects.py` writes it)."""

from __future__ import annotations

from pydantic import Field

from mlxcompat.records.base import Record
from mlxcompat.records.names import Observed


class Idempotence(Record):
    """A second call, `unpatch` where offered, and a re-apply, each observed."""

    raised: bool = False  # the first call raised; `left_changed` is what it left behind
    left_changed: list[str] = Field(default_factory=list)
    second_call_raised: str = ""
    second_call_changed: list[str] = Field(default_factory=list)
    unpatch_offered: bool = False
    unpatch_raised: str = ""
    not_restored: list[str] = Field(default_factory=list)
    reapply_raised: str = ""
    reapply_differs: list[str] = Field(default_factory=list)
    # Installed files (of mlx, mlx-lm, mlx-vlm) whose bytes differ from their RECORD after
    # the calls: a change that outlives the process and every unpatch.
    wrote_files: list[str] = Field(default_factory=list)


class PatchRow(Record):
    """One entry point of one subject: observed status beside its own claim."""

    subject: str
    role: str
    entry_point: str
    observed: Observed
    imported: bool = True
    claim: list[str] = Field(default_factory=list)  # the statuses its self-report agrees with
    agrees: bool = True
    changed: list[str] = Field(default_factory=list)
    detail: str = ""
    returned: str = ""
    log: list[str] = Field(default_factory=list)
    idempotence: Idempotence | None = None
    reused: bool = False
