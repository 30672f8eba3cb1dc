"""The release lists a matrix's subject families expand from (`<matrix>.lock.json`).

A family that asks for `all` (or the `newest`) releases of a package expands at matrix load
time from this recorded list, never from the index: the report, and any run, read the same
subjects offline. `mlxcompat releases --write` records the lists (it needs the index).
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import Field

from mlxcompat.records.base import Record, RecordError

LOCK_SCHEMA = 1


class PackageReleases(Record):
    """Every final, non-yanked release of one package on the index, oldest first."""

    versions: list[str]
    recorded: str = ""  # when (UTC, ISO 8601) the list was read from the index


class ReleaseLock(Record):
    schema_: int = Field(LOCK_SCHEMA, alias="schema")
    packages: dict[str, PackageReleases] = Field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        return self.model_dump(by_alias=True)


def lock_path(matrix: Path) -> Path:
    """`matrix.yaml` -> `matrix.lock.json`, beside it."""
    return matrix.with_name(matrix.stem + ".lock.json")


def read_lock(path: Path) -> ReleaseLock | None:
    """The lock at `path`, None when there is none; an unreadable one is a RecordError."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path.name}: unreadable ({exc})") from None
    schema = data.get("schema") if isinstance(data, dict) else None
    if schema != LOCK_SCHEMA:
        raise RecordError(f"{path.name}: schema {schema!r}; this mlxcompat reads {LOCK_SCHEMA}")
    return ReleaseLock.from_json(data, path.name)
