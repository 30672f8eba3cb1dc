"""What a run is: typed records for one cell (`CellRun`, written by nox and read by
`mlxcompat run`) and for one subject process (`SubjectRun`, written by the runner and read
by the pytest plugin), and `RunOptions`, a cell run with its matrix objects resolved.

One JSON file each instead of a dozen command-line options, so a mistyped key fails loudly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from pydantic import Field

from mlxcompat.matrix import Matrix, SubjectSpec
from mlxcompat.records.base import Record, RecordError
from mlxcompat.records.cell import CellDoc, Inputs, InstallRecord
from mlxcompat.records.names import cell_name
from mlxcompat.registry import ModelDecl, Registry, RoleDecl
from mlxcompat.settings import BenchProfile


class _FileRecord(Record):
    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(self.to_json(), indent=1, default=str), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path | str) -> Self:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as exc:
            raise RecordError(f"{path}: unreadable ({exc})") from None
        return cls.from_json(data, f"{path} (another mlxcompat?)")


class CellRun(_FileRecord):
    """One cell to run: what nox decided (inputs, install, reuse), for `mlxcompat run`."""

    cell: str  # the matrix cell id ("local" outside a matrix)
    label: str = ""  # the runner label; files are named <cell>@<label>
    out: str
    backend: str
    run_id: str
    subjects: list[str]
    models: list[str]
    checks: list[str] = Field(default_factory=list)  # empty: the matrix's
    only: dict[str, list[str]] = Field(default_factory=dict)  # key -> allowed values
    bench: str = "off"  # a profile of settings.bench, or off
    tolerance: float = 1e-4
    timeout_s: float = 1200
    jobs: int = 1
    subject_dir: str = ""
    install: InstallRecord | None = None
    inputs: Inputs = Field(default_factory=Inputs)
    reuse: bool = False
    pytest_args: list[str] = Field(default_factory=list)
    harness: str = ""  # the mlxcompat running it (installs.harness_identity)
    # subject -> the subject whose run it shares (byte-identical entry-point modules)
    same_as: dict[str, str] = Field(default_factory=dict)
    borrow: bool = True  # a subject observed to change nothing takes none's behaviour rows
    # subject -> its checks' seconds in the cell's last document: the longest start first
    last_seconds: dict[str, float] = Field(default_factory=dict)

    @property
    def name(self) -> str:
        """The cell document's name: `<cell>` or `<cell>@<label>`."""
        return cell_name(self.cell, self.label)


class SubjectRun(_FileRecord):
    """Everything the pytest plugin needs to run one subject in one cell."""

    cell: str
    subject: str
    out: str
    entry_points: dict[str, str] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list)
    only: dict[str, list[str]] = Field(default_factory=dict)
    tolerance: float = 1e-4
    device: str = "cpu"
    force_cpu: list[str] = Field(default_factory=list)
    bench: BenchProfile | None = None
    need_path: str = ""  # where the need probe's record is (or will be) written
    hosts_need_probe: bool = False  # this (patch-free) process runs the need probe first
    installs: bool = False
    install_error: str = ""
    turn_ends: list[int | str] = Field(default_factory=list)  # the turn-taking channel
    bench_cpu: int | None = None
    bench_place: str = ""  # unpinned: where the timed thread runs (mlxcompat.placement)
    others_frozen: bool = False  # the runner freezes the other subjects during this one's turns
    model_decls: dict[str, dict[str, Any]] = Field(default_factory=dict)
    role_decls: dict[str, dict[str, Any]] = Field(default_factory=dict)
    # The subject whose behaviour rows this one takes when its entry points are observed to
    # change nothing ("" : it runs its own; mlxcompat.borrow)
    borrow_from: str = ""

    @classmethod
    def with_registry(cls, registry: Registry, **kwargs: Any) -> SubjectRun:
        return cls(**kwargs,
                   model_decls={n: asdict(m) for n, m in registry.models.items()},
                   role_decls={n: asdict(r) for n, r in registry.roles.items()})

    def registry(self) -> Registry:
        models = {n: ModelDecl(**{**d, "modes": tuple(d["modes"])})
                  for n, d in self.model_decls.items()}
        roles = {n: RoleDecl(**{**d, **{k: tuple(d[k]) for k in ("targets", "checks", "models")}})
                 for n, d in self.role_decls.items()}
        return Registry(models, roles)


@dataclass
class RunOptions:
    """A `CellRun` with its matrix objects resolved, as the runner uses it."""

    run: CellRun
    matrix: Matrix
    subjects: list[SubjectSpec]
    bench: BenchProfile | None = None
    device: str = "cpu"
    force_cpu: tuple[str, ...] = ()
    need_probe: bool = True
    previous: CellDoc | None = None  # the last document of this cell (with --reuse)
    reused: tuple[str, ...] = ()  # subjects whose rows are taken from `previous`

    @property
    def out(self) -> Path:
        return Path(self.run.out)
