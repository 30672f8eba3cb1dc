"""Load and validate matrix.yaml: cells, subjects, models, checks, settings, expectations.

Imports no mlx: the noxfile and the report read it. Every error names the key path and
what is allowed, in one line.
"""

from __future__ import annotations

import fnmatch
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

KNOWN_MODELS = ("llama", "mamba", "mamba2", "qwen3_next", "qwen3_5", "glm4v_moe")
KNOWN_CHECKS = ("parity", "cache-contract", "glm4v", "patch-status", "run", "install")
KNOWN_ROLES = ("mamba", "mamba-legacy", "glm4v")
VERDICTS = ("pass", "fail", "error", "skip")
PINNED = ("mlx-lm", "mlx", "mlx-vlm")

_TOP = {"schema", "settings", "backends", "subjects", "models", "checks", "defaults", "cells",
        "expectations"}
_SETTINGS = {"python": "3.11", "timeout_s": 1200, "tolerance": 1e-4, "throughput_threshold": 0.2,
             "bench": {}, "backend": "cpu", "force_cpu_devices": []}
_PLATFORMS = ("linux", "darwin")
_BENCH_KEYS = {"default", "models", "profiles"}
_PROFILE_KEYS = {"batches", "rounds", "warmup", "prompt_tokens", "gen_tokens"}
DEFAULT_PROFILE = {"batches": [1, 4, 8, 16], "rounds": 5, "warmup": 2, "prompt_tokens": 32,
                   "gen_tokens": 64}
_SUBJECT_KEYS = {"description", "install", "entry_points"}
_CELL_KEYS = {"id", *PINNED, "models", "subjects", "tags", "timeout_s"}
_MATCH_KEYS = {"check", "model", "mode", "subject", "cell", "mlx-lm", "mlx-vlm", "mlx"}
_EXPECT_KEYS = {"match", "verdict", "reason", "link"}


class MatrixError(ValueError):
    """A malformed matrix.yaml; the message names the key path and what is allowed."""


@dataclass(frozen=True)
class SubjectSpec:
    name: str
    entry_points: dict[str, str] = field(default_factory=dict)
    install: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Cell:
    id: str
    pins: dict[str, str]
    models: tuple[str, ...]
    subjects: tuple[str, ...]
    tags: tuple[str, ...] = ()
    timeout_s: int = 1200

    def requirements(self, mlx_template: str) -> list[str]:
        """pip requirements of this cell; `mlx_template` is the backend's mlx requirement."""
        reqs = [f"{name}=={v}" for name, v in self.pins.items() if name != "mlx"]
        return [*reqs, mlx_template.format(v=self.pins["mlx"])]


@dataclass(frozen=True)
class Expectation:
    """A known outcome. `match` maps a key to a version specifier (mlx-lm, mlx-vlm, mlx) or to
    glob patterns (check, model, mode, subject, cell), any one of which may match."""

    match: dict[str, tuple[str, ...]]
    verdict: str
    reason: str
    link: str = ""

    def matches(self, result: dict[str, Any], cell: str, packages: dict[str, str]) -> bool:
        """Does this entry cover `result` of `cell` run with `packages` (name -> version)?"""
        for key, patterns in self.match.items():
            if key in PINNED:
                version = packages.get(key)
                if version is None or Version(version) not in SpecifierSet(patterns[0]):
                    return False
            else:
                value = cell if key == "cell" else str(result.get(key, ""))
                if not any(fnmatch.fnmatchcase(value, p) for p in patterns):
                    return False
        return True


@dataclass(frozen=True)
class Backend:
    """How mlx is installed for a backend on each platform, and the device the checks use."""

    name: str
    device: str
    requirement: dict[str, str]


@dataclass(frozen=True)
class Matrix:
    settings: dict[str, Any]
    backends: dict[str, Backend]
    subjects: dict[str, SubjectSpec]
    cells: tuple[Cell, ...]
    expectations: tuple[Expectation, ...]

    def cell(self, cell_id: str) -> Cell:
        for c in self.cells:
            if c.id == cell_id:
                return c
        raise MatrixError(f"no cell {cell_id!r}; known: {', '.join(c.id for c in self.cells)}")

    def backend(self, name: str | None = None) -> Backend:
        name = name or self.settings["backend"]
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

    def bench_profile(self, name: str | None = None) -> dict[str, Any] | None:
        """The named throughput profile (default: settings.bench.default); None for `off`."""
        bench = self.settings["bench"]
        name = name or bench.get("default", "full")
        if name == "off":
            return None
        profiles = bench.get("profiles") or {"full": DEFAULT_PROFILE}
        if name not in profiles:
            raise MatrixError(f"no bench profile {name!r}; known: off, {', '.join(profiles)}")
        models = bench.get("models") or ["llama", "mamba2", "qwen3_next", "qwen3_5"]
        return {"name": name, **DEFAULT_PROFILE, **profiles[name], "models": list(models)}

    def expectation_for(
        self, result: dict[str, Any], cell: str, packages: dict[str, str]
    ) -> Expectation | None:
        return next((e for e in self.expectations if e.matches(result, cell, packages)), None)


def _fail(path: str, message: str) -> MatrixError:
    return MatrixError(f"matrix.yaml: {path}: {message}")


def _mapping(value: Any, path: str, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _fail(path, f"expected a mapping, got {type(value).__name__}")
    for key in value:
        if key not in allowed:
            raise _fail(f"{path}.{key}", f"unknown key; allowed: {', '.join(sorted(allowed))}")
    return value


def _names(value: Any, path: str, known: tuple[str, ...] | set[str], what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _fail(path, f"expected a list of {what} names")
    for i, name in enumerate(value):
        if name not in known:
            raise _fail(f"{path}[{i}]", f"unknown {what} {name!r}; known: {', '.join(known)}")
    return tuple(value)


def _version(value: Any, path: str) -> str:
    try:
        return str(Version(str(value)))
    except InvalidVersion:
        raise _fail(path, f"{value!r} is not a valid version (e.g. 0.29.2)") from None


def _bench(raw: Any) -> dict[str, Any]:
    bench = _mapping(raw or {}, "settings.bench", _BENCH_KEYS)
    _names(bench.get("models", []), "settings.bench.models", KNOWN_MODELS, "model")
    profiles = _mapping(bench.get("profiles") or {}, "settings.bench.profiles",
                        set(bench.get("profiles") or {}))
    for name, profile in profiles.items():
        path = f"settings.bench.profiles.{name}"
        profile = _mapping(profile, path, _PROFILE_KEYS)
        for key, value in profile.items():
            values = value if key == "batches" else [value]
            minimum = 0 if key == "warmup" else 1
            if not values or not all(isinstance(v, int) and v >= minimum for v in values):
                raise _fail(f"{path}.{key}", f"{value!r}; expected integer(s) >= {minimum}")
    default = bench.get("default", "full")
    if default != "off" and profiles and default not in profiles:
        raise _fail("settings.bench.default", f"{default!r}; known: off, {', '.join(profiles)}")
    return bench


def _backends(raw: Any) -> dict[str, Backend]:
    backends = {}
    for name, spec in _mapping(raw or {}, "backends", set(raw or {})).items():
        spec = _mapping(spec, f"backends.{name}", {"device", "requirement"})
        if spec.get("device") not in ("cpu", "gpu"):
            raise _fail(f"backends.{name}.device", f"{spec.get('device')!r}; allowed: cpu, gpu")
        req = _mapping(spec.get("requirement") or {}, f"backends.{name}.requirement",
                       set(_PLATFORMS))
        for platform, template in req.items():
            if "{v}" not in str(template):
                raise _fail(f"backends.{name}.requirement.{platform}", "needs the {v} placeholder")
        if not req:
            raise _fail(f"backends.{name}.requirement", "name at least one platform")
        backends[name] = Backend(name, spec["device"], dict(req))
    if not backends:
        raise _fail("backends", "missing: say how mlx is installed (e.g. cpu: mlx[cpu]=={v})")
    return backends


def _subjects(raw: Any) -> dict[str, SubjectSpec]:
    subjects = {}
    for name, spec in _mapping(raw or {}, "subjects", set(raw or {})).items():
        spec = _mapping(spec or {}, f"subjects.{name}", _SUBJECT_KEYS)
        eps = _mapping(spec.get("entry_points") or {}, f"subjects.{name}.entry_points",
                       set(KNOWN_ROLES))
        for role, ep in eps.items():
            if not isinstance(ep, str) or ep.count(":") != 1:
                raise _fail(f"subjects.{name}.entry_points.{role}",
                            f"{ep!r} is not of the form module:function")
        install = spec.get("install") or []
        if not isinstance(install, list):
            raise _fail(f"subjects.{name}.install", "expected a list of requirements or paths")
        subjects[name] = SubjectSpec(name, dict(eps), tuple(install), spec.get("description", ""))
    return subjects


def _cell(raw: Any, i: int, defaults: dict[str, Any], subjects: dict[str, SubjectSpec],
          models: tuple[str, ...], timeout: int) -> Cell:
    path = f"cells[{i}]"
    raw = _mapping(raw, path, _CELL_KEYS)
    for required in ("mlx-lm", "mlx"):
        if required not in raw:
            raise _fail(f"{path}.{required}", "missing pin (every cell pins mlx-lm and mlx)")
    pins = {k: _version(raw[k], f"{path}.{k}") for k in PINNED if k in raw}
    default_id = f"mlx-vlm-{pins['mlx-vlm']}" if "mlx-vlm" in pins else f"mlx-lm-{pins['mlx-lm']}"
    return Cell(
        id=str(raw.get("id", default_id)),
        pins=pins,
        models=_names(raw.get("models", defaults.get("models", list(models))), f"{path}.models",
                      models, "model"),
        subjects=_names(raw.get("subjects", defaults.get("subjects", list(subjects))),
                        f"{path}.subjects", tuple(subjects), "subject"),
        tags=tuple(raw.get("tags", ())),
        timeout_s=int(raw.get("timeout_s", timeout)),
    )


def _expectation(raw: Any, i: int, subjects: dict[str, SubjectSpec]) -> Expectation:
    path = f"expectations[{i}]"
    raw = _mapping(raw, path, _EXPECT_KEYS)
    match = _mapping(raw.get("match") or {}, f"{path}.match", _MATCH_KEYS)
    for key in PINNED:
        if key in match:
            try:
                SpecifierSet(str(match[key]))
            except InvalidSpecifier:
                msg = f"{match[key]!r} is not a version specifier (e.g. '>=0.30.4')"
                raise _fail(f"{path}.match.{key}", msg) from None
    patterns = {k: tuple(str(p) for p in v) if isinstance(v, list) else (str(v),)
                for k, v in match.items()}
    checks = {"check": KNOWN_CHECKS, "model": KNOWN_MODELS, "subject": tuple(subjects)}
    for key, known in checks.items():
        for value in patterns.get(key, ("*",)):
            if not any(fnmatch.fnmatchcase(k, value) for k in known):
                msg = f"{value!r} matches no known {key}: {', '.join(known)}"
                raise _fail(f"{path}.match.{key}", msg)
    if raw.get("verdict") not in VERDICTS:
        raise _fail(f"{path}.verdict", f"{raw.get('verdict')!r}; allowed: {', '.join(VERDICTS)}")
    if not str(raw.get("reason", "")).strip():
        raise _fail(f"{path}.reason", "every expectation needs a reason")
    return Expectation(patterns, raw["verdict"], " ".join(str(raw["reason"]).split()),
                       str(raw.get("link", "")))


def parse_matrix(data: Any) -> Matrix:
    """Validate an already-parsed matrix document."""
    data = _mapping(data, "<top>", _TOP)
    if data.get("schema") != 1:
        raise _fail("schema", f"{data.get('schema')!r}; this mlxcompat reads schema 1")
    settings = {**_SETTINGS, **_mapping(data.get("settings") or {}, "settings", set(_SETTINGS))}
    settings["bench"] = _bench(settings["bench"])
    backends = _backends(data.get("backends"))
    if settings["backend"] not in backends:
        raise _fail("settings.backend", f"{settings['backend']!r}; known: {', '.join(backends)}")
    subjects = _subjects(data.get("subjects"))
    models = _names(data.get("models", list(KNOWN_MODELS)), "models", KNOWN_MODELS, "model")
    _names(data.get("checks", list(KNOWN_CHECKS)), "checks", KNOWN_CHECKS, "check")
    defaults = _mapping(data.get("defaults") or {}, "defaults", {"subjects", "models"})
    raw_cells = data.get("cells")
    if not isinstance(raw_cells, list) or not raw_cells:
        raise _fail("cells", "expected a non-empty list of cells")
    cells = tuple(_cell(c, i, defaults, subjects, models, int(settings["timeout_s"]))
                  for i, c in enumerate(raw_cells))
    seen: dict[str, int] = {}
    for i, c in enumerate(cells):
        if c.id in seen:
            raise _fail(f"cells[{i}].id", f"duplicate cell id {c.id!r} (also cells[{seen[c.id]}])")
        seen[c.id] = i
    expectations = tuple(_expectation(e, i, subjects)
                         for i, e in enumerate(data.get("expectations") or []))
    return Matrix(settings, backends, subjects, cells, expectations)


def load_matrix(path: Path | str = "matrix.yaml") -> Matrix:
    """Read and validate `path`; raises MatrixError with one clear line."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise MatrixError(f"{path}: not found") from None
    except yaml.YAMLError as exc:
        raise MatrixError(f"{path}: not valid YAML: {exc}".splitlines()[0]) from None
    return parse_matrix(data)
