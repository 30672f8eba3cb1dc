"""`mlxcompat releases`: keep the matrix up with upstream.

Compares PyPI's final, non-yanked releases of mlx-lm, mlx-vlm and every subject package with
matrix.yaml and names each release newer than the newest cell (or subject) that covers it;
exits non-zero when there is one. `--write` appends what is missing the way the existing
entries are written: an mlx-lm cell pinned to the mlx floor its wheel declares, an mlx-vlm
cell beside the newest mlx-lm, and a subject for a new release of a subject package (a copy
of the newest one's entry points, which the matrix then tests for real). A subject family's
releases are recorded in `<matrix>.lock.json` instead (`--write` rewrites it), which its
`all` / `newest` expand from.
"""

from __future__ import annotations

import re
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.version import Version

from mlxcompat.matrix import Matrix
from mlxcompat.pypi import releases, wheel_for
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.lock import PackageReleases, ReleaseLock, lock_path, read_lock

_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==(\S+)$")


@dataclass(frozen=True)
class Missing:
    kind: str  # "mlx-lm" | "mlx-vlm" | a subject package
    version: str
    yaml: str  # the line(s) --write appends


def mlx_floor(wheel: Path) -> str:
    """The lowest mlx version a wheel declares (`mlx>=X`), whatever its platform marker."""
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode().splitlines()
    for line in lines:
        if line.startswith("Requires-Dist:"):
            req = Requirement(line.split(":", 1)[1].strip())
            if req.name == "mlx" and not (req.marker and "extra" in str(req.marker)):
                floors = [s.version for s in req.specifier if s.operator in (">=", "==")]
                if floors:
                    return floors[0]
    raise RuntimeError(f"{wheel.name} declares no mlx floor")


def _newest(matrix: Matrix, axis: str) -> Version | None:
    pinned = [Version(c.pins[axis]) for c in matrix.cells if axis in c.pins
              and (axis == "mlx-vlm" or "mlx-vlm" not in c.pins)]
    return max(pinned) if pinned else None


def _subject_pins(matrix: Matrix) -> dict[str, list[tuple[Version, str]]]:
    """package -> [(version, subject name)] for subjects installed from a pinned requirement."""
    found: dict[str, list[tuple[Version, str]]] = {}
    for spec in matrix.subjects.values():
        if spec.family:
            continue  # a family's releases come from the lock (family_missing)
        for req in spec.requirements:
            match = _PIN.match(req)
            if match:
                found.setdefault(match.group(1), []).append((Version(match.group(2)), spec.name))
    return found


def find_missing(matrix: Matrix, wheels: Path) -> list[Missing]:
    missing: list[Missing] = []
    newest_lm = _newest(matrix, "mlx-lm")
    lm_versions = releases("mlx-lm", str(newest_lm or "0"), "99999")
    for v in lm_versions:
        if newest_lm is not None and Version(v) <= newest_lm:
            continue
        floor = mlx_floor(wheel_for("mlx-lm", v, wheels))
        missing.append(Missing("mlx-lm", v, f'  - {{mlx-lm: "{v}", mlx: "{floor}"}}'))
    newest_vlm = _newest(matrix, "mlx-vlm")
    if newest_vlm is not None:
        lm = lm_versions[-1] if lm_versions else str(newest_lm)
        lm_floor = mlx_floor(wheel_for("mlx-lm", lm, wheels))
        for v in releases("mlx-vlm", str(newest_vlm), "99999"):
            if Version(v) <= newest_vlm:
                continue
            both = max(Version(lm_floor), Version(mlx_floor(wheel_for("mlx-vlm", v, wheels))))
            missing.append(Missing("mlx-vlm", v, f'  - {{mlx-vlm: "{v}", mlx-lm: "{lm}", '
                                   f'mlx: "{both}", models: [llama, glm4v_moe]}}'))
    for package, pins in _subject_pins(matrix).items():
        newest, name = max(pins)
        for v in releases(package, str(newest), "99999"):
            if Version(v) > newest:
                missing.append(Missing(package, v, _subject_yaml(matrix, name, package, v)))
    return missing


def _subject_yaml(matrix: Matrix, name: str, package: str, version: str) -> str:
    spec = matrix.subjects[name]
    points = "".join(f"\n      {role}: {ep}" for role, ep in spec.entry_points.items())
    return (f"  {package}-{version}:\n    description: {package} {version} (added by "
            f"`mlxcompat releases --write` from {name}'s entry points)\n"
            f'    install: ["{package}=={version}"]\n    entry_points:{points}')


def _insert_after_last(lines: list[str], prefix: str, new: list[str]) -> bool:
    index = max((i for i, line in enumerate(lines) if line.startswith(prefix)), default=None)
    if index is None:
        return False
    lines[index + 1:index + 1] = new
    return True


def write_missing(path: Path, missing: list[Missing]) -> list[str]:
    """Append every missing entry to matrix.yaml next to its kind; returns what it could not."""
    lines = path.read_text(encoding="utf-8").splitlines()
    left = []
    for kind, prefix in (("mlx-lm", "  - {mlx-lm:"), ("mlx-vlm", "  - {mlx-vlm:")):
        new = [m.yaml for m in missing if m.kind == kind]
        if new and not _insert_after_last(lines, prefix, new):
            left += new
    subjects = [m.yaml for m in missing if m.kind not in ("mlx-lm", "mlx-vlm")]
    if subjects:
        at = next((i for i, line in enumerate(lines) if line.startswith("subjects:")), None)
        if at is None:
            left += subjects
        else:
            lines[at + 1:at + 1] = "\n".join(subjects).splitlines()
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return left


def report_gaps(report: Path) -> int:
    """Name the releases between neighbouring cells where a verdict flips (1 if any)."""
    from mlxcompat.gaps import find_gaps
    from mlxcompat.records.base import RecordError
    from mlxcompat.records.report import read_compat

    try:
        gaps = find_gaps(read_compat(report))
    except RecordError as exc:
        print(f"[mlxcompat] releases: {exc}; no boundaries checked")
        return 1
    for gap in gaps:
        print(f"[mlxcompat] releases: {gap.axis} {gap.low} -> {gap.high}: "
              f"{len(gap.flips)} verdict(s) flip and PyPI has {', '.join(gap.unmeasured)} "
              f"between: add a cell or `{gap.bisect_hint()}`"
              + (f" (the cells also differ in {'; '.join(gap.others)})" if gap.others else ""))
        for flip in gap.flips[:5]:
            print(f"[mlxcompat] releases:   {flip}")
    return 1 if gaps else 0


def lock_families(path: Path, write: bool = False) -> list[Missing]:
    """Releases of each family's package on the index that `<matrix>.lock.json` does not
    record (read from the matrix file itself: without the lock it cannot be loaded);
    `write` records every family's releases there."""
    from mlxcompat.families import is_family

    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    packages = sorted({raw["package"] for raw in (data.get("subjects") or {}).values()
                       if is_family(raw)})
    lock = read_lock(lock_path(path))
    fresh = ReleaseLock(packages=dict(lock.packages) if lock else {})
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    missing = []
    for package in packages:
        found = releases(package, "0", "99999")
        if package not in fresh.packages:
            print(f"[mlxcompat] releases: {lock_path(path).name} records no release of "
                  f"{package} ({len(found)} on the index)")
        known = set(fresh.packages[package].versions) if package in fresh.packages else set()
        new = [v for v in found if v not in known]
        if known:
            for v in new:
                print(f"[mlxcompat] releases: {package} {v} is not in {lock_path(path).name}")
        missing += [Missing(package, v, "") for v in new]
        fresh.packages[package] = PackageReleases(versions=found, recorded=now)
    if write and missing:
        write_json_atomic(lock_path(path), fresh.to_json())
        print(f"[mlxcompat] releases: recorded the releases of {', '.join(packages)} in "
              f"{lock_path(path)}")
    return missing


def check_releases(matrix: Matrix, path: Path, write: bool = False,
                   wheels: Path = Path(".nox/wheels"), report: Path | None = None) -> int:
    gaps = report_gaps(report) if report is not None and report.exists() else 0
    missing = find_missing(matrix, wheels)
    if not missing:
        print("[mlxcompat] releases: the matrix covers every release on PyPI")
        return gaps
    for m in missing:
        print(f"[mlxcompat] releases: {m.kind} {m.version} is newer than the matrix covers")
    if write:
        left = write_missing(path, missing)
        print(f"[mlxcompat] releases: appended {len(missing) - len(left)} entr(ies) to {path}")
        for text in left:
            print(f"[mlxcompat] releases: add by hand:\n{text}")
    return 1
