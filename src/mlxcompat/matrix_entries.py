"""The entries of matrix.yaml: backends, subjects, cells and runner labels, each parsed into a
frozen record; every error names the key path and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat.checks.catalog import selectable
from mlxcompat.expectations import PINNED
from mlxcompat.families import Family, expand_names, is_family, parse_family
from mlxcompat.records.lock import ReleaseLock
from mlxcompat.registry import Registry
from mlxcompat.sources import Source, parse_source
from mlxcompat.validation import fail, mapping, names, version

_PLATFORMS = ("linux", "darwin")
SUBJECT_KEYS = {"description", "install", "entry_points"}
CELL_KEYS = {"id", *PINNED, "resolve", "models", "subjects", "extra_subjects", "tags",
             "timeout_s", "bench_models", "bench", "curve", "extra_checks"}
LATEST = "latest"


@dataclass(frozen=True)
class SubjectSpec:
    """Whose patches are active in a run; `install` entries are requirements or local paths."""

    name: str
    entry_points: dict[str, str] = field(default_factory=dict)
    install: tuple[str, ...] = ()
    description: str = ""
    family: str = ""  # the family this subject is a release of ('' for a plain subject)
    version: str = ""  # that release

    @property
    def paths(self) -> tuple[str, ...]:
        """Install entries that are local folders (installed editable, --no-deps)."""
        return tuple(i for i in self.install if is_path(i))

    @property
    def requirements(self) -> tuple[str, ...]:
        return tuple(i for i in self.install if not is_path(i))

    def folders(self, base: Path) -> tuple[Path, ...]:
        return tuple((base / p).expanduser().resolve() for p in self.paths)


def is_path(entry: str) -> bool:
    return entry == "." or entry.startswith(("./", "../", "/", "~"))


def packaged(folder: Path) -> bool:
    """Can pip install the folder? One without packaging metadata (LM Studio's mlx-engine is
    a requirements.txt and a package folder) goes on the subject's path as it is."""
    return any((folder / f).exists() for f in ("pyproject.toml", "setup.py", "setup.cfg"))


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
    bench: str = ""  # this cell's bench profile when the run names none
    curve: str = ""  # the profile `nox -s curve` runs here, into <cell>.curve.json
    sources: dict[str, Source] = field(default_factory=dict)  # packages built from source
    extra_checks: tuple[str, ...] = ()  # run here beside the matrix's `checks:` (heavy ones)

    def requirements(self, mlx_template: str, base: Path | None = None,
                     pins: dict[str, str] | None = None) -> list[str]:
        """pip requirements of the cell (`pins`: a resolved cell's); `mlx_template` is the
        backend's mlx requirement; a package from source is its git URL or local path."""
        pins = self.pins if pins is None else pins
        base = base or Path.cwd()
        reqs = [f"{name}=={v}" for name, v in pins.items() if name != "mlx"]
        reqs += [s.requirement(base) for name, s in self.sources.items() if name != "mlx"]
        mlx = self.sources["mlx"].requirement(base) if "mlx" in self.sources else \
            mlx_template.format(v=pins["mlx"])
        return [*reqs, mlx]


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


def parse_backends(raw: Any) -> dict[str, Backend]:
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


def parse_subjects(raw: Any, registry: Registry, lock: ReleaseLock | None = None
                   ) -> tuple[dict[str, SubjectSpec], dict[str, Family]]:
    """Plain subjects, and the members of every family (see mlxcompat.families)."""
    subjects: dict[str, SubjectSpec] = {}
    families: dict[str, Family] = {}
    for name, spec in mapping(raw or {}, "subjects").items():
        if is_family(spec):
            family = parse_family(name, spec, registry.roles, lock)
            families[name] = family
            for member, release in family.members().items():
                if member in subjects:
                    raise fail(f"subjects.{name}", f"its member {member!r} is declared too")
                subjects[member] = SubjectSpec(
                    member, family.entry_points_of(release), (f"{family.package}=={release}",),
                    f"{family.description} ({family.package} {release})".strip(),
                    family=name, version=release)
            continue
        if name in subjects:
            raise fail(f"subjects.{name}", "a family's member of this name is declared above")
        spec = mapping(spec or {}, f"subjects.{name}", SUBJECT_KEYS)
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
    return subjects, families


def _default_id(resolve: str, pins: dict[str, str], sources: dict[str, Source]) -> str:
    if resolve:
        return LATEST if resolve == LATEST else f"as-installed-{resolve}"
    if sources:  # not a PyPI release: named by its commit or folder, never as one
        return next(s.cell_id for k, s in sources.items() if k != "mlx") \
            if any(k != "mlx" for k in sources) else sources["mlx"].cell_id
    if "mlx-vlm" in pins:
        return f"mlx-vlm-{pins['mlx-vlm']}"
    return f"mlx-lm-{pins['mlx-lm']}"


def parse_cell(raw: Any, i: int, defaults: dict[str, Any], subjects: dict[str, SubjectSpec],
               registry: Registry, timeout: int,
               families: dict[str, Family] | None = None) -> Cell:
    path = f"cells[{i}]"
    raw = mapping(raw, path, CELL_KEYS)
    families = families or {}
    resolve = str(raw.get("resolve", ""))
    if resolve and resolve != LATEST and resolve not in subjects:
        raise fail(f"{path}.resolve", f"{resolve!r}; allowed: {LATEST} or a subject name")
    if resolve and set(PINNED) & set(raw):
        raise fail(f"{path}.resolve", "a resolved cell pins nothing; drop its pins")
    if resolve in families and resolve not in subjects:
        raise fail(f"{path}.resolve", f"{resolve!r} is a family of several releases; name one "
                   f"({', '.join(families[resolve].members())})")
    if resolve and resolve != LATEST and not subjects[resolve].requirements:
        raise fail(f"{path}.resolve", f"subject {resolve!r} has no requirement to resolve")
    if not resolve:
        for required in ("mlx-lm", "mlx"):
            if required not in raw:
                raise fail(f"{path}.{required}", "missing pin (every cell pins mlx-lm and mlx)")
    sources = {k: parse_source(k, raw[k], f"{path}.{k}") for k in PINNED
               if isinstance(raw.get(k), dict)}
    pins = {k: version(raw[k], f"{path}.{k}") for k in PINNED if k in raw and k not in sources}
    chosen = expand_names(raw.get("subjects", defaults.get("subjects", list(subjects))),
                          families)
    extra = expand_names(raw.get("extra_subjects", []), families)
    if isinstance(chosen, list) and isinstance(extra, list):
        chosen = list(dict.fromkeys([*chosen, *extra]))
    tags = raw.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail(f"{path}.tags", "expected a list of tag names")
    return Cell(
        id=str(raw.get("id", _default_id(resolve, pins, sources))),
        pins=pins,
        models=names(raw.get("models", defaults.get("models", list(registry.models))),
                     f"{path}.models", registry.models, "model"),
        subjects=names(chosen, f"{path}.subjects", subjects, "subject"),
        tags=tuple(tags),
        timeout_s=int(raw.get("timeout_s", timeout)),
        resolve=resolve,
        bench_models=names(raw.get("bench_models", []), f"{path}.bench_models",
                           registry.models, "model"),
        bench=str(raw.get("bench", "")),
        curve=str(raw.get("curve", "")),
        sources=sources,
        extra_checks=_extra_checks(raw.get("extra_checks", []), f"{path}.extra_checks"),
    )


def _extra_checks(raw: Any, path: str) -> tuple[str, ...]:
    return names(raw, path, selectable(), "check")


def parse_runners(raw: Any, cells: tuple[Cell, ...], backends: dict[str, Backend],
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


