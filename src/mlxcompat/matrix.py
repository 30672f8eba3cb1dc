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
from mlxcompat.expectations import PINNED, Expectation, first_covering, parse_expectation
from mlxcompat.records.cell import Environment
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry, RegistryError, build_registry
from mlxcompat.settings import BenchProfile, Settings, parse_settings
from mlxcompat.validation import MatrixError, fail, mapping, names, version

__all__ = ["Cell", "Matrix", "MatrixError", "SubjectSpec", "load_matrix", "parse_matrix"]

SCHEMA = 3
# What changed from schema 2, for the one-line refusal of an old file.
SCHEMA_2_FIX = ("in expectations, `match.mode` of import / patch-status / idempotence is now "
                "`role`, of glm4v `scenario` + `path` (`padded/inner` -> scenario: padded, "
                "path: inner), of cache-contract `scenario`, of upstream-suite `test`; a bench "
                "profile's `gate` is now `gating`; then set `schema: 3`")
_TOP = {"schema", "settings", "backends", "subjects", "models", "roles", "checks", "defaults",
        "cells", "runners", "expectations"}
_PLATFORMS = ("linux", "darwin")
_SUBJECT_KEYS = {"description", "install", "entry_points"}
_CELL_KEYS = {"id", *PINNED, "resolve", "models", "subjects", "tags", "timeout_s", "bench_models"}
LATEST = "latest"


@dataclass(frozen=True)
class SubjectSpec:
    """Whose patches are active in a run; `install` entries are requirements or local paths."""

    name: str
    entry_points: dict[str, str] = field(default_factory=dict)
    install: tuple[str, ...] = ()
    description: str = ""

    @property
    def paths(self) -> tuple[str, ...]:
        """Install entries that are local folders (installed editable, --no-deps)."""
        return tuple(i for i in self.install if is_path(i))

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(i for i in self.install if not is_path(i))


def is_path(entry: str) -> bool:
    return entry == "." or entry.startswith(("./", "../", "/", "~"))


@dataclass(frozen=True)
class Cell:
    """One environment. Pinned cells name their releases; a resolved cell (`resolve`) gets
    them at install time: `latest` (the newest of each) or a subject as pip installs it."""

    id: str
    pins: dict[str, str]
    models: tuple[str, ...]
    subjects: tuple[str, ...]
    tags: tuple[str, ...] = ()
    timeout_s: int = 1200
    resolve: str = ""
    bench_models: tuple[str, ...] = ()  # narrows the profile's models in this cell

    def requirements(self, mlx_template: str) -> list[str]:
        """pip requirements of a pinned cell; `mlx_template` is the backend's mlx requirement."""
        reqs = [f"{name}=={v}" for name, v in self.pins.items() if name != "mlx"]
        return [*reqs, mlx_template.format(v=self.pins["mlx"])]


@dataclass(frozen=True)
class Backend:
    """How mlx is installed for a backend on each platform, and the device the checks use."""

    name: str
    device: str
    requirement: dict[str, str]


@dataclass(frozen=True)
class Runner:
    """A runner label whose cell JSONs may sit in reports/raw, and the cells it must have."""

    label: str
    cells: tuple[str, ...]
    backend: str = ""
    subjects: tuple[str, ...] = ()  # narrows every cell's subjects on this runner
    models: tuple[str, ...] = ()  # narrows every cell's models on this runner


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
        """The first expectation that covers `result` of matrix cell `base`."""
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

    def source_dir(self) -> Path:
        """Relative paths in matrix.yaml are relative to its folder."""
        return (self.path.parent if self.path else Path.cwd()).resolve()


def _backends(raw: Any) -> dict[str, Backend]:
    backends = {}
    for name, spec in mapping(raw or {}, "backends").items():
        spec = mapping(spec, f"backends.{name}", {"device", "requirement"})
        if spec.get("device") not in ("cpu", "gpu"):
            raise fail(f"backends.{name}.device", f"{spec.get('device')!r}; allowed: cpu, gpu")
        req = mapping(spec.get("requirement") or {}, f"backends.{name}.requirement", _PLATFORMS)
        for platform, template in req.items():
            if "{v}" not in str(template):
                raise fail(f"backends.{name}.requirement.{platform}", "needs the {v} placeholder")
        if not req:
            raise fail(f"backends.{name}.requirement", "name at least one platform")
        backends[name] = Backend(name, spec["device"], dict(req))
    if not backends:
        raise fail("backends", "missing: say how mlx is installed (e.g. cpu: mlx[cpu]=={v})")
    return backends


def _subjects(raw: Any, registry: Registry) -> dict[str, SubjectSpec]:
    subjects = {}
    for name, spec in mapping(raw or {}, "subjects").items():
        spec = mapping(spec or {}, f"subjects.{name}", _SUBJECT_KEYS)
        eps = mapping(spec.get("entry_points") or {}, f"subjects.{name}.entry_points",
                      registry.roles)
        for role, ep in eps.items():
            if not isinstance(ep, str) or ep.count(":") != 1:
                raise fail(f"subjects.{name}.entry_points.{role}",
                           f"{ep!r} is not of the form module:function")
        install = spec.get("install") or []
        if not isinstance(install, list) or not all(isinstance(i, str) for i in install):
            raise fail(f"subjects.{name}.install", "expected a list of requirements or paths")
        subjects[name] = SubjectSpec(name, dict(eps), tuple(install), spec.get("description", ""))
    if not subjects:
        raise fail("subjects", "declare at least one subject (e.g. none: {})")
    return subjects


def _cell(raw: Any, i: int, defaults: dict[str, Any], subjects: dict[str, SubjectSpec],
          registry: Registry, timeout: int) -> Cell:
    path = f"cells[{i}]"
    raw = mapping(raw, path, _CELL_KEYS)
    resolve = str(raw.get("resolve", ""))
    if resolve and resolve != LATEST and resolve not in subjects:
        raise fail(f"{path}.resolve", f"{resolve!r}; allowed: {LATEST} or a subject name")
    if resolve and set(PINNED) & set(raw):
        raise fail(f"{path}.resolve", "a resolved cell pins nothing; drop its pins")
    if resolve and resolve != LATEST and not subjects[resolve].requirements:
        raise fail(f"{path}.resolve", f"subject {resolve!r} has no requirement to resolve")
    if not resolve:
        for required in ("mlx-lm", "mlx"):
            if required not in raw:
                raise fail(f"{path}.{required}", "missing pin (every cell pins mlx-lm and mlx)")
    pins = {k: version(raw[k], f"{path}.{k}") for k in PINNED if k in raw}
    if resolve:
        default_id = LATEST if resolve == LATEST else f"as-installed-{resolve}"
    elif "mlx-vlm" in pins:
        default_id = f"mlx-vlm-{pins['mlx-vlm']}"
    else:
        default_id = f"mlx-lm-{pins['mlx-lm']}"
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail(f"{path}.tags", "expected a list of tag names")
    return Cell(
        id=str(raw.get("id", default_id)),
        pins=pins,
        models=names(raw.get("models", defaults.get("models", list(registry.models))),
                     f"{path}.models", registry.models, "model"),
        subjects=names(raw.get("subjects", defaults.get("subjects", list(subjects))),
                       f"{path}.subjects", subjects, "subject"),
        tags=tuple(tags),
        timeout_s=int(raw.get("timeout_s", timeout)),
        resolve=resolve,
        bench_models=names(raw.get("bench_models", []), f"{path}.bench_models",
                           registry.models, "model"),
    )


def _runners(raw: Any, cells: tuple[Cell, ...], backends: dict[str, Backend],
             subjects: dict[str, SubjectSpec], registry: Registry) -> dict:
    runners = {}
    for label, spec in mapping(raw or {}, "runners").items():
        spec = mapping(spec, f"runners.{label}", {"cells", "backend", "subjects", "models"})
        chosen = names(spec.get("cells", [c.id for c in cells]), f"runners.{label}.cells",
                       [c.id for c in cells], "cell")
        backend = str(spec.get("backend", ""))
        if backend and backend not in backends:
            raise fail(f"runners.{label}.backend", f"{backend!r}; known: {', '.join(backends)}")
        runners[label] = Runner(
            label, chosen, backend,
            names(spec.get("subjects", []), f"runners.{label}.subjects", subjects, "subject"),
            names(spec.get("models", []), f"runners.{label}.models", registry.models, "model"))
    return runners


def _role_checks(registry: Registry) -> None:
    """A role may answer for the checks of the catalog only."""
    for role in registry.roles.values():
        for i, check in enumerate(role.checks):
            if check not in CATALOG:
                raise fail(f"roles.{role.name}.checks[{i}]",
                           f"unknown check {check!r}; known: {', '.join(CATALOG)}")


def parse_matrix(data: Any, path: Path | None = None) -> Matrix:
    """Validate an already-parsed matrix document."""
    data = mapping(data, "<top>", _TOP)
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
    backends = _backends(data.get("backends"))
    if settings.backend not in backends:
        raise fail("settings.backend", f"{settings.backend!r}; known: {', '.join(backends)}")
    subjects = _subjects(data.get("subjects"), registry)
    checks = names(data.get("checks", list(DEFAULT_CHECKS)), "checks", selectable(), "check")
    defaults = mapping(data.get("defaults") or {}, "defaults", {"subjects", "models"})
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        raise fail("cells", "expected a non-empty list of cells")
    cells = tuple(_cell(c, i, defaults, subjects, registry, int(settings.timeout_s))
                  for i, c in enumerate(raw_cells))
    seen: dict[str, int] = {}
    for i, c in enumerate(cells):
        if c.id in seen:
            raise fail(f"cells[{i}].id", f"duplicate cell id {c.id!r} (also cells[{seen[c.id]}])")
        seen[c.id] = i
    runners = _runners(data.get("runners"), cells, backends, subjects, registry)
    expectations = tuple(
        parse_expectation(e, i, registry, tuple(subjects), tuple(c.id for c in cells),
                          tuple(backends))
        for i, e in enumerate(data.get("expectations") or []))
    return Matrix(settings, backends, subjects, cells, expectations, registry, checks, runners,
                  path)


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

