"""`mlxcompat drift`: the patch targets of every release in the matrix, scanned from its wheels.

Wheels are fetched once from the index into a cache folder; reading one is well
under a second. The result, reports/drift.json, feeds the report's API-drift section.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from packaging.requirements import Requirement
from packaging.version import Version

from mlxcompat.drivers.drift_scan import (
    LM_FILES,
    VLM_FILES,
    read_wheel,
    scan_lm_sources,
    scan_vlm_sources,
)
from mlxcompat.matrix import Matrix
from mlxcompat.pypi import releases, requires_dist, wheel_for
from mlxcompat.records.files import write_json_atomic


def scan_release(pins: dict[str, str], cache: Path) -> dict[str, Any]:
    """One drift row: mlx-lm targets, plus mlx-vlm's where the cell pins it."""
    lm_wheel = wheel_for("mlx-lm", pins["mlx-lm"], cache)
    vlm_wheel = wheel_for("mlx-vlm", pins["mlx-vlm"], cache) if "mlx-vlm" in pins else None
    start = time.perf_counter()
    lm_src = read_wheel(lm_wheel, LM_FILES)
    row: dict[str, Any] = {"pins": pins, "lm": scan_lm_sources(lm_src)}
    if vlm_wheel is not None:
        row["vlm"] = scan_vlm_sources(read_wheel(vlm_wheel, VLM_FILES), lm_src)
    row["seconds"] = round(time.perf_counter() - start, 4)
    return row


# Where the servers' users run them (what resolve.py resolves as-installed cells for): a
# requirement with a marker counts where it holds there (vMLX caps mlx-vlm on Darwin only).
APPLE = {"sys_platform": "darwin", "platform_system": "Darwin", "platform_machine": "arm64",
         "os_name": "posix", "python_version": "3.11", "extra": ""}


def subject_requires(matrix: Matrix, cache: Path) -> dict[str, dict[str, str]]:
    """What each subject installed from a pinned requirement declares it needs of mlx-lm,
    mlx-vlm and mlx (its Requires-Dist on PyPI), for the report's ∅ marks."""
    found: dict[str, dict[str, str]] = {}
    for spec in matrix.subjects.values():
        for req in spec.requirements:
            parsed = Requirement(req)
            pinned = [s.version for s in parsed.specifier if s.operator == "=="]
            if not pinned:
                continue
            ranges = {}
            for line in requires_dist(parsed.name, pinned[0], cache):
                dep = Requirement(line)
                if dep.name in ("mlx-lm", "mlx-vlm", "mlx") and str(dep.specifier) and (
                        dep.marker is None or dep.marker.evaluate(APPLE)):
                    ranges[dep.name] = str(dep.specifier)
            found[spec.name] = ranges
    return found


def axis_releases(matrix: Matrix) -> dict[str, list[str]]:
    """Every final PyPI release of mlx-lm and mlx-vlm from the oldest cell of its axis on: the
    report says "fixed in X" only where no release lies between X and the cell before it."""
    found = {}
    for axis in ("mlx-lm", "mlx-vlm"):
        pinned = [c.pins[axis] for c in matrix.cells if axis in c.pins
                  and (axis == "mlx-vlm" or "mlx-vlm" not in c.pins)]
        if pinned:
            found[axis] = releases(axis, min(pinned, key=Version), "99999")
    return found


def scan_matrix(matrix: Matrix, cache: Path, out: Path) -> dict[str, Any]:
    """Scan every pinned cell of the matrix (a resolved cell repeats a pinned release); a
    release that cannot be read is a row with its error."""
    rows = []
    for cell in matrix.cells:
        if cell.resolve:
            continue
        try:
            row = scan_release(dict(cell.pins), cache)
        except Exception as exc:
            row = {"pins": dict(cell.pins), "error": f"{type(exc).__name__}: {exc}"}
        row["cell"] = cell.id
        rows.append(row)
        took = f"{row['seconds']:.3f}s" if "seconds" in row else row["error"]
        print(f"[mlxcompat] drift {cell.id}: {took}", flush=True)
    doc: dict[str, Any] = {"schema": 1, "rows": rows}
    try:
        doc["requires"] = subject_requires(matrix, cache)
    except Exception as exc:
        doc["requires_error"] = f"{type(exc).__name__}: {exc}"
    try:
        doc["releases"] = axis_releases(matrix)
    except Exception as exc:
        doc["releases_error"] = f"{type(exc).__name__}: {exc}"
    write_json_atomic(out, doc)
    return doc
