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


class ProcessState(Record):
    """What an entry point (its import and first call) changed beyond its targets: mlx's
    random key, default device and stream, the logging configuration, os.environ, and the
    modules it imported (recorded, not judged: importing mlx_lm's modules is its job)."""

    random_key: list[list[int]] = Field(default_factory=list)  # before, after
    device: list[str] = Field(default_factory=list)
    stream: list[str] = Field(default_factory=list)
    logging: list[str] = Field(default_factory=list)  # changed loggers: "name: what"
    environ: list[str] = Field(default_factory=list)  # keys added, removed or changed
    imported: list[str] = Field(default_factory=list)  # top-level packages newly imported
    modules: int = 0  # modules newly imported, all told
    # Recorded, not judged: what the entry point changed in mlx, mlx_lm or mlx_vlm outside its
    # role's targets (mlxcompat.footprint), e.g. a process-wide shim of an mlx.core function.
    beyond_targets: list[str] = Field(default_factory=list)

    def changes(self) -> list[str]:
        """Every change a patch must not make, one line each."""
        found = []
        if len(self.random_key) == 2 and self.random_key[0] != self.random_key[1]:
            found.append(f"mlx's random key {self.random_key[0]} -> {self.random_key[1]}")
        for what, pair in (("default device", self.device), ("default stream", self.stream)):
            if len(pair) == 2 and pair[0] != pair[1]:
                found.append(f"{what} {pair[0]} -> {pair[1]}")
        found += [f"logging {x}" for x in self.logging]
        found += [f"os.environ {x}" for x in self.environ]
        return found


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
    process: ProcessState | None = None  # None: not observed (an older harness)
    reused: bool = False
