"""Load and validate matrix.yaml: cells, subjects, models, roles, settings, expectations.

Imports no mlx: the noxfile and the report read it. Every error names the key path and
what is allowed, in one line.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mlxcompat.checks.catalog import CATALOG, DEFAULT_CHECKS, selectable
from mlxcompat.expectations import Expectation, first_covering, parse_expectation
from mlxcompat.families import Family
from mlxcompat.matrix_entries import (
    LATEST,
    Backend,
    Cell,
    Runner,
    SubjectSpec,
    parse_backends,
    parse_cell,
    parse_runners,
    parse_subjects,
)
from mlxcompat.records.base import RecordError
from mlxcompat.records.cell import Environment
from mlxcompat.records.lock import ReleaseLock, lock_path, read_lock
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry, RegistryError, build_registry
from mlxcompat.settings import BenchProfile, Settings, parse_settings
from mlxcompat.validation import MatrixError, fail, mapping, names

__all__ = ["LATEST", "Cell", "Matrix", "MatrixError", "SubjectSpec", "load_matrix",
           "parse_matrix"]

SCHEMA = 3
# What changed from schema 2, for the one-line refusal of an old file.
SCHEMA_2_FIX = ("in expectations, `match.mode` of import / patch-status / idempotence is now "
                "`role`, of glm4v `scenario` + `path` (`padded/inner` -> scenario: padded, "
                "path: inner), of cache-contract `scenario`, of upstream-suite `test`; a bench "
                "profile's `gate` is now `gating`; then set `schema: 3`")
TOP_KEYS = {"schema", "settings", "backends", "subjects", "models", "roles", "checks", "defaults",
        "cells", "runners", "expectations"}


@dataclass(frozen=True)
class Matrix:
    settings: Settings
    backends: dict[str, Backend]
    subjects: dict[str, SubjectSpec]
    cells: tuple[Cell, ...]
    expectations: tuple[Expectation, ...]
    registry: Registry
    checks: tuple[str, ...] = DEFAULT_CHECKS
    runners: dict[str, Runner] = field(default_factory=dict)
    path: Path | None = None
    families: dict[str, Family] = field(default_factory=dict)

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise MatrixError(f"no cell {cell_id!r}; known: {', '.join(c.id for c in self.cells)}")

    def backend(self, name: str | None = None) -> Backend:
        name = name or self.settings.backend
        if name not in self.backends:
            raise MatrixError(f"no backend {name!r}; known: {', '.join(self.backends)}")
        return self.backends[name]

    def mlx_template(self, platform: str = sys.platform, backend: str | None = None) -> str:
        """The mlx requirement template ({v}) for a platform and backend."""
        chosen = self.backend(backend)
        key = "darwin" if platform == "darwin" else "linux"
        if key not in chosen.requirement:
            raise MatrixError(f"backend {chosen.name} cannot be installed on {key}; it has: "
                              f"{', '.join(chosen.requirement)}")
        return chosen.requirement[key]

    def bench_profile(self, name: str | None = None) -> BenchProfile | None:
        """The named throughput profile (default: settings.bench.default); None for `off`."""
        bench = self.settings.bench
        name = name or bench.default
        if name == "off":
            return None
        if name not in bench.profiles:
            raise MatrixError(f"no bench profile {name!r}; known: off, "
                              f"{', '.join(bench.profiles)}")
        return bench.profiles[name]

    def expectation_for(self, result: ResultRow, base: str, packages: dict[str, str],
                        env: Environment | None = None) -> Expectation | None:
        """The first expectation that covers `result` of matrix cell `base` (a family
        member's release is matched by an expectation's `release`)."""
        subject = self.subjects.get(result.subject)
        if subject is not None and subject.version:
            packages = {**packages, "release": subject.version}
        return first_covering(self.expectations, result, base, packages, env)

    def cells_for(self, label: str = "", tag: str = "", only: tuple[str, ...] = ()
                  ) -> tuple[Cell, ...]:
        """The cells a runner label must have: its declared subset, else every (tagged) cell;
        `only`: the run was asked for just these cells."""
        runner = self.runners.get(label)
        cells = [c for c in self.cells if runner is None or c.id in runner.cells]
        return tuple(c for c in cells if (not tag or tag == "all" or tag in c.tags)
                     and (not only or c.id in only))

    def expected(self, cell: Cell, label: str = "") -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(subjects, models) a cell's JSON must have rows for on this runner label."""
        runner = self.runners.get(label)
        subjects, models = cell.subjects, cell.models
        if runner is not None and runner.subjects:
            subjects = tuple(s for s in subjects if s in runner.subjects)
        if runner is not None and runner.models:
            models = tuple(m for m in models if m in runner.models)
        return subjects, models

    def run_checks(self, cell: Cell | None = None) -> tuple[str, ...]:
        """The checks a run executes when `--checks` names none: the `always` ones, the
        matrix's `checks:`, then the cell's `extra_checks`."""
        always = [name for name, spec in CATALOG.items() if spec.always]
        extra = cell.extra_checks if cell is not None else ()
        return tuple(dict.fromkeys((*always, *self.checks, *extra)))

    def source_dir(self) -> Path:
        """Relative paths in matrix.yaml are relative to its folder."""
        return (self.path.parent if self.path else Path.cwd()).resolve()


def _role_checks(registry: Registry) -> None:
    """A role may answer for the checks of the catalog only."""
    for role in registry.roles.values():
        for i, check in enumerate(role.checks):
            if check not in CATALOG:
                raise fail(f"roles.{role.name}.checks[{i}]",
                           f"unknown check {check!r}; known: {', '.join(CATALOG)}")


def _lock(path: Path | None) -> ReleaseLock | None:
    if path is None:
        return None
    try:
        return read_lock(lock_path(path))
    except RecordError as exc:
        raise MatrixError(f"{lock_path(path).name}: {exc}") from None


def parse_matrix(data: Any, path: Path | None = None, lock: ReleaseLock | None = None
                 ) -> Matrix:
    """Validate an already-parsed matrix document (`lock`: the families' release lists;
    default: `<matrix>.lock.json` beside `path`)."""
    data = mapping(data, "<top>", TOP_KEYS)
    if data.get("schema") == 2:
        raise fail("schema", f"2; this mlxcompat reads schema {SCHEMA}: {SCHEMA_2_FIX}")
    if data.get("schema") != SCHEMA:
        raise fail("schema", f"{data.get('schema')!r}; this mlxcompat reads schema {SCHEMA}")
    try:
        registry = build_registry(data.get("models"), data.get("roles"))
    except RegistryError as exc:
        raise MatrixError(f"matrix.yaml: {exc}") from None
    _role_checks(registry)
    settings = parse_settings(data.get("settings"), registry)
    backends = parse_backends(data.get("backends"))
    if settings.backend not in backends:
        raise fail("settings.backend", f"{settings.backend!r}; known: {', '.join(backends)}")
    subjects, families = parse_subjects(data.get("subjects"), registry,
                                        lock if lock is not None else _lock(path))
    checks = names(data.get("checks", list(DEFAULT_CHECKS)), "checks", selectable(), "check")
    defaults = mapping(data.get("defaults") or {}, "defaults", {"subjects", "models"})
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        raise fail("cells", "expected a non-empty list of cells")
    cells = tuple(parse_cell(c, i, defaults, subjects, registry, int(settings.timeout_s),
                             families) for i, c in enumerate(raw_cells))
    for i, c in enumerate(cells):
        for key, profile in (("bench", c.bench), ("curve", c.curve)):
            if profile and profile not in settings.bench.profiles:
                raise fail(f"cells[{i}].{key}", f"{profile!r}; known: "
                           f"{', '.join(settings.bench.profiles)}")
    seen: dict[str, int] = {}
    for i, c in enumerate(cells):
        if c.id in seen:
            raise fail(f"cells[{i}].id", f"duplicate cell id {c.id!r} (also cells[{seen[c.id]}])")
        seen[c.id] = i
    runners = parse_runners(data.get("runners"), cells, backends, subjects, registry)
    members = {name: tuple(f.members()) for name, f in families.items()}
    expectations = tuple(
        parse_expectation(e, i, registry, tuple(subjects), tuple(c.id for c in cells),
                          tuple(backends), members)
        for i, e in enumerate(data.get("expectations") or []))
    return Matrix(settings, backends, subjects, cells, expectations, registry, checks, runners,
                  path, families)


def load_matrix(path: Path | str = "matrix.yaml") -> Matrix:
    """Read and validate `path`; raises MatrixError with one clear line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatrixError(f"{path}: not found") from None
    except yaml.YAMLError as exc:
        raise MatrixError(f"{path}: not valid YAML: {exc}".splitlines()[0]) from None
    return parse_matrix(data, path)

