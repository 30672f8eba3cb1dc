"""The entries of matrix.yaml: backends, subjects, cells and runner labels, each parsed into a
frozen record; every error names the key path and what is allowed."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlxcompat.checks.catalog import selectable
from mlxcompat.expectations import PINNED
from mlxcompat.registry import Registry
from mlxcompat.validation import fail, mapping, names, version

_PLATFORMS = ("linux", "darwin")
SUBJECT_KEYS = {"description", "install", "entry_points"}
CELL_KEYS = {"id", *PINNED, "resolve", "models", "subjects", "tags", "timeout_s", "bench_models",
             "extra_checks"}
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
    extra_checks: tuple[str, ...] = ()  # run here beside the matrix's `checks:` (heavy ones)

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


def parse_subjects(raw: Any, registry: Registry) -> dict[str, SubjectSpec]:
    subjects = {}
    for name, spec in mapping(raw or {}, "subjects").items():
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
    return subjects


def parse_cell(raw: Any, i: int, defaults: dict[str, Any], subjects: dict[str, SubjectSpec],
          registry: Registry, timeout: int) -> Cell:
    path = f"cells[{i}]"
    raw = mapping(raw, path, CELL_KEYS)
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


