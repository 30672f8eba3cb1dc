"""Subject families: one matrix entry for many releases of a server's package.

    subjects:
      vllm-mlx:
        package: vllm-mlx
        versions: all                    # or newest, or a list of releases
        within: ">=0.2.0,<=0.6.0"
        entry_points:
          mamba: {entry: "vllm_mlx.utils.mamba_cache:ensure_mamba_support", releases: ">=0.2.1"}

expands to one subject per release, `vllm-mlx-0.2.0` … `vllm-mlx-0.6.0` (`newest`: one subject
named after the family), each installing `vllm-mlx==X` with the entry points whose `releases`
hold X. `all` and `newest` read the release list recorded in `<matrix>.lock.json`
(`mlxcompat releases --write`), so loading a matrix never needs the index. Wherever matrix.yaml
lists subjects, a family's name stands for all its members.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from mlxcompat.records.lock import ReleaseLock
from mlxcompat.validation import fail, mapping, specifier, version

FAMILY_KEYS = {"description", "package", "versions", "within", "entry_points"}
ENTRY_KEYS = {"entry", "releases"}
EXPANSIONS = ("all", "newest")


@dataclass(frozen=True)
class FamilyEntry:
    """An entry point of a family, and the releases whose package ships its module."""

    entry: str
    releases: SpecifierSet = field(default_factory=SpecifierSet)


@dataclass(frozen=True)
class Family:
    name: str
    package: str
    versions: tuple[str, ...]  # oldest first
    entry_points: dict[str, FamilyEntry]
    description: str = ""
    newest_only: bool = False

    def member(self, release: str) -> str:
        """The subject name of one release (`newest`: the family's own name)."""
        return self.name if self.newest_only else f"{self.name}-{release}"

    def members(self) -> dict[str, str]:
        """subject name -> release, oldest first."""
        return {self.member(v): v for v in self.versions}

    def entry_points_of(self, release: str) -> dict[str, str]:
        return {role: e.entry for role, e in self.entry_points.items()
                if Version(release) in e.releases}


def is_family(raw: Any) -> bool:
    return isinstance(raw, dict) and "package" in raw


def _entry(raw: Any, path: str, roles: Iterable[str]) -> FamilyEntry:
    if isinstance(raw, str):
        raw = {"entry": raw}
    raw = mapping(raw, path, ENTRY_KEYS)
    entry = raw.get("entry")
    if not isinstance(entry, str) or entry.count(":") != 1:
        raise fail(f"{path}.entry", f"{entry!r} is not of the form module:function")
    return FamilyEntry(entry, specifier(raw.get("releases", ""), f"{path}.releases"))


def _versions(raw: dict[str, Any], path: str, lock: ReleaseLock | None) -> tuple[tuple[str, ...],
                                                                             bool]:
    wanted = raw.get("versions", "all")
    within = specifier(raw.get("within", ""), f"{path}.within")
    if isinstance(wanted, list):
        found = [version(v, f"{path}.versions[{i}]") for i, v in enumerate(wanted)]
        return tuple(sorted(dict.fromkeys(found), key=Version)), False
    if wanted not in EXPANSIONS:
        raise fail(f"{path}.versions", f"{wanted!r}; allowed: a list of releases, "
                   f"{', '.join(EXPANSIONS)}")
    package = raw["package"]
    recorded = lock.packages.get(package) if lock is not None else None
    if recorded is None:
        raise fail(f"{path}.versions", f"{wanted}: no release list of {package} is recorded; "
                   "run `mlxcompat releases --write` (it reads the index) and commit the lock")
    kept = [v for v in recorded.versions if Version(v) in within]
    if not kept:
        raise fail(f"{path}.within", f"no recorded release of {package} is {within}")
    kept.sort(key=Version)
    return (tuple(kept[-1:]), True) if wanted == "newest" else (tuple(kept), False)


def parse_family(name: str, raw: Any, roles: Iterable[str],
                 lock: ReleaseLock | None) -> Family:
    path = f"subjects.{name}"
    raw = mapping(raw, path, FAMILY_KEYS)
    package = raw.get("package")
    if not isinstance(package, str) or not package:
        raise fail(f"{path}.package", "name the package on the index (e.g. vllm-mlx)")
    roles = tuple(roles)
    eps = mapping(raw.get("entry_points") or {}, f"{path}.entry_points", roles)
    entries = {role: _entry(ep, f"{path}.entry_points.{role}", roles)
               for role, ep in eps.items()}
    versions, newest = _versions(raw, path, lock)
    return Family(name, package, versions, entries, str(raw.get("description", "")), newest)


def expand_names(value: Any, families: Mapping[str, Family]) -> Any:
    """A list of subject names with each family name replaced by its members."""
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for name in value:
        out += list(families[name].members()) if name in families else [name]
    return list(dict.fromkeys(out))
