"""A cell's document (reports/raw/<cell>[@<label>].json), schema 3, and its parts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ConfigDict, Field

from mlxcompat.records.base import Record, RecordError
from mlxcompat.records.bench import BenchRow
from mlxcompat.records.names import SCHEMA
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import ResultRow


class Fingerprint(Record):
    """What makes throughput comparable: only a baseline with the same one gates a run."""

    os: str = ""
    arch: str = ""
    cpu: str = ""
    cores: int | None = None
    backend: str = ""
    device: str = ""


class Environment(Record):
    """What the cell ran on, and which device the subject processes chose."""

    python: str = ""
    platform: str = ""
    packages: dict[str, str] = Field(default_factory=dict)
    mlx_enable_tf32: str | None = None
    backend: str = ""
    device_name: str = ""
    fingerprint: Fingerprint = Field(default_factory=Fingerprint)
    requested_device: str = ""
    device: str = ""
    gpu_name: str | None = None
    forced_cpu: str | None = None
    need: NeedRecord | None = None
    jobs: int | None = None


class SubjectInstall(Record):
    ok: bool
    error: str = ""


class InstalledSource(Record):
    """A package built from source (mlxcompat.sources): what was asked and what it got."""

    requested: str  # the requirement: git URL @ commit or ref, or the folder
    commit: str = ""  # the commit installed (a ref resolved; a folder's git HEAD)
    tree: str = ""  # a folder's tree hash
    dirty: bool = False  # a folder whose work tree differs from its HEAD
    version: str = ""  # the version the built package declares


class InstallRecord(Record):
    """How nox installed the cell (a cell run outside nox has the default: nothing known)."""

    ok: bool = True
    error: str = ""
    seconds: float | None = None
    backend: str = ""
    harness: list[str] = Field(default_factory=list)
    requirements: list[str] = Field(default_factory=list)
    resolved: dict[str, str] = Field(default_factory=dict)
    resolved_for: str = ""  # the platform a resolved cell was resolved for
    subjects: dict[str, SubjectInstall] = Field(default_factory=dict)
    log_tail: str = ""
    reused: bool = False
    sources: dict[str, InstalledSource] = Field(default_factory=dict)


class Seconds(Record):
    start: float = 0.0
    checks: float = 0.0
    bench: float = 0.0


class Borrowed(Record):
    """The behaviour cases a subject did not run itself: its entry points, observed in its
    own process, changed nothing, so `source` (`none`) runs the same code (`mlxcompat.borrow`).
    """

    source: str
    cases: list[dict[str, str]] = Field(default_factory=list)  # check and keys, "" left out


class SubjectCounts(Record):
    collected: int = 0
    bench_cases: int = 0
    recorded: int = 0
    returncode: int | None = None
    seconds: Seconds | None = None
    reused: bool = False
    # Its rows are those of this subject, whose entry points' modules are byte-identical
    # (one run for both; mlxcompat.sharing).
    same_as: str = ""
    borrowed: Borrowed | None = None


class Inputs(Record):
    """What the results depend on, hashed (see `cellrun`): `--reuse` compares these."""

    cell: str = ""
    subjects: dict[str, str] = Field(default_factory=dict)


class CellDoc(Record):
    """One cell: every subject's results, patches and throughput rows."""

    schema_: int = Field(SCHEMA, alias="schema")
    cell: str
    complete: bool = False
    run_id: str = ""
    harness: str = ""  # the mlxcompat that ran it: version, and commit where known
    started: float | None = None
    finished: float | None = None
    reused_by: str = ""
    # What the run was asked to check (files written before these fields: the cell's defaults),
    # so the report can tell a narrowed or outdated run from a complete one.
    checks: list[str] = Field(default_factory=list)
    only: dict[str, list[str]] = Field(default_factory=dict)
    inputs: Inputs = Field(default_factory=Inputs)
    env: Environment = Field(default_factory=Environment)
    install: InstallRecord = Field(default_factory=InstallRecord)
    subjects: dict[str, SubjectCounts] = Field(default_factory=dict)
    results: list[ResultRow] = Field(default_factory=list)
    patches: list[PatchRow] = Field(default_factory=list)
    bench: list[BenchRow] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


def read_cell(path: Path) -> CellDoc:
    """A cell JSON of schema 3, or of schema 2 migrated; anything else is a RecordError."""
    from mlxcompat.records.migrate import cell_v2

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path.name}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path.name}: not a JSON object")
    schema = data.get("schema")
    if schema == 2:
        data = cell_v2(data)
    elif schema != SCHEMA:
        raise RecordError(f"{path.name}: schema {schema!r}; this mlxcompat reads schema "
                          f"{SCHEMA} (and migrates 2): rerun the cell with this mlxcompat")
    return CellDoc.from_json(data, path.name)


class UpstreamRun(Record):
    """`<cell>.upstream.<subject>.json`: mlx-lm's own tests without and with a subject."""

    schema_: int = Field(SCHEMA, alias="schema")
    cell: str
    mlx_lm: str
    subject: str
    files: list[str] = Field(default_factory=list)
    results: list[ResultRow] = Field(default_factory=list)
    applied: list[str] = Field(default_factory=list)

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


def read_upstream(path: Path) -> UpstreamRun:
    """An upstream-suite record of schema 3, or 2 migrated."""
    from mlxcompat.records.migrate import result_v2

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path.name}: unreadable ({type(exc).__name__}: {exc})") from None
    if isinstance(data, dict) and data.get("schema") == 2:
        data = {**data, "schema": SCHEMA,
                "results": [result_v2(r) for r in data.get("results", [])]}
    return UpstreamRun.from_json(data, path.name)
