"""What one subject process runs: a typed record the runner writes and the plugin reads.

One JSON file instead of a dozen command-line options, so a mistyped key fails loudly.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from mlxcompat.registry import ModelDecl, Registry, RoleDecl


@dataclass
class SubjectRun:
    """Everything the pytest plugin needs to run one subject in one cell."""

    cell: str
    subject: str
    out: str
    entry_points: dict[str, str] = field(default_factory=dict)
    models: list[str] = field(default_factory=list)
    checks: list[str] = field(default_factory=list)
    modes: list[str] = field(default_factory=list)
    tolerance: float = 1e-4
    device: str = "cpu"
    force_cpu: list[str] = field(default_factory=list)
    bench: dict[str, Any] | None = None
    probe: str = ""
    host_probe: bool = False
    installs: bool = False
    install_error: str = ""
    gate: list[int | str] = field(default_factory=list)
    bench_cpu: int | None = None
    model_decls: dict[str, dict[str, Any]] = field(default_factory=dict)
    role_decls: dict[str, dict[str, Any]] = field(default_factory=dict)

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

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=1), encoding="utf-8")
        return path

    @classmethod
    def read(cls, path: Path | str) -> SubjectRun:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        unknown = set(data) - {f.name for f in fields(cls)}
        if unknown:
            raise ValueError(f"{path}: unknown keys {sorted(unknown)} (another mlxcompat?)")
        return cls(**data)
