"""The few PyPI look-ups the drift scan and bisect need, over the JSON simple API (PEP 691).

Plain urllib, so it works in any venv (uv-made ones have no pip).
"""

from __future__ import annotations

import json
import shutil
import urllib.request
from pathlib import Path
from typing import Any

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import Version

SIMPLE = "https://pypi.org/simple/{}/"


def simple_index(package: str) -> list[dict[str, Any]]:
    """The files of `package` as the index lists them (filename, url, yanked, ...)."""
    request = urllib.request.Request(SIMPLE.format(package),
                                     headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return list(json.load(response)["files"])


def _version_of(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename):
        return None


def releases(package: str, low: str, high: str) -> list[str]:
    """Final, non-yanked releases of `package` from `low` to `high` inclusive, oldest first."""
    files: dict[Version, list[bool]] = {}
    for f in simple_index(package):
        version = _version_of(f["filename"])
        if version is not None:
            files.setdefault(version, []).append(bool(f.get("yanked")))
    lo, hi = Version(low), Version(high)
    kept = [v for v, yanked in files.items() if not all(yanked)]
    return [str(v) for v in sorted(kept) if lo <= v <= hi and not v.is_prerelease]


def requires_dist(package: str, version: str, cache: Path) -> list[str]:
    """The Requires-Dist lines of one release, read from its wheel's METADATA."""
    import zipfile

    with zipfile.ZipFile(wheel_for(package, version, cache)) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        lines = z.read(meta).decode("utf-8").splitlines()
    return [line.split(":", 1)[1].strip() for line in lines if line.startswith("Requires-Dist:")]


def newest(package: str) -> str:
    """The newest final, non-yanked release of `package`."""
    found = releases(package, "0", "99999")
    if not found:
        raise RuntimeError(f"no release of {package} on the index")
    return found[-1]


def wheel_for(package: str, version: str, cache: Path) -> Path:
    """The pure-Python wheel of `package==version` in `cache`, downloaded there once."""
    stem = package.replace("-", "_")
    return _fetch(package, version, cache, f"{stem}-{version}-*.whl", "-none-any.whl",
                  "pure-Python wheel")


def sdist_for(package: str, version: str, cache: Path) -> Path:
    """The source distribution of `package==version` in `cache` (upstream's tests are in it)."""
    stem = package.replace("-", "_")
    return _fetch(package, version, cache, f"{stem}-{version}.tar.gz", ".tar.gz", "sdist")


def _fetch(package: str, version: str, cache: Path, pattern: str, suffix: str,
           what: str) -> Path:
    found = sorted(cache.glob(pattern))
    if found:
        return found[0]
    wanted = Version(version)
    candidates = [f for f in simple_index(package) if f["filename"].endswith(suffix)
                  and _version_of(f["filename"]) == wanted]
    if not candidates:
        raise RuntimeError(f"no {what} of {package}=={version} on the index")
    cache.mkdir(parents=True, exist_ok=True)
    target = cache / candidates[0]["filename"]
    partial = target.with_name(target.name + ".part")
    with urllib.request.urlopen(candidates[0]["url"], timeout=120) as response, \
            partial.open("wb") as fh:
        shutil.copyfileobj(response, fh)
    partial.replace(target)
    return target
