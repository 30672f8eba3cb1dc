"""`mlxcompat bisect`: the first mlx-lm release whose verdict differs from the lower bound's.

Candidates are all PyPI releases in the range (yanked and pre-releases skipped), not just the
matrix cells. Each visited release becomes a cell of a generated matrix file pinned to the mlx
floor its wheel declares, built and run through the same noxfile, so venvs of the main matrix
(same cell id, same pins) are reused.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.requirements import Requirement

from mlxcompat.matrix import Matrix
from mlxcompat.pypi import releases, wheel_for


def mlx_floor(wheel: Path) -> str:
    """The lowest mlx version the wheel declares (`mlx>=X`), whatever its platform marker."""
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


@dataclass
class Bisect:
    matrix: Matrix
    check: str
    model: str
    mode: str
    subject: str
    work: Path
    root: Path
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)

    def cell_id(self, version: str) -> str:
        return f"mlx-lm-{version}"

    def write_matrix(self, versions: list[str], wheels: Path) -> Path:
        cells = [{"mlx-lm": v, "mlx": mlx_floor(wheel_for("mlx-lm", v, wheels)),
                  "models": [self.model], "subjects": [self.subject]} for v in versions]
        spec = self.matrix.subjects[self.subject]
        doc = {"schema": 1, "settings": {"bench": {"default": "off"}},
               "backends": {n: {"device": b.device, "requirement": b.requirement}
                            for n, b in self.matrix.backends.items()},
               "subjects": {self.subject: {"install": list(spec.install),
                                           "entry_points": spec.entry_points}},
               "cells": cells}
        path = self.work / "matrix.yaml"
        path.write_text(yaml.safe_dump(doc, sort_keys=False))
        return path

    def verdict(self, version: str, matrix_file: Path) -> tuple[str, str]:
        """Run one release's cell (building or reusing its venv) and read the verdict."""
        if version in self.seen:
            return self.seen[version]
        cell = self.cell_id(version)
        raw = self.work / "raw"
        env = {**os.environ, "MLXCOMPAT_MATRIX": str(matrix_file), "MLXCOMPAT_RAW": str(raw),
               "MLXCOMPAT_LABEL": ""}
        cmd = ["nox", "-f", str(self.root / "noxfile.py"), "-r", "-s", f"matrix({cell})", "--",
               f"--checks={self.check}", f"--modes={self.mode}"]
        start = time.perf_counter()
        subprocess.run(cmd, cwd=self.root, env=env, capture_output=True, check=False)
        found = self._read(raw / f"{cell}.json")
        self.seen[version] = found
        print(f"[bisect] mlx-lm {version}: {found[0]}  ({time.perf_counter() - start:.1f}s)"
              + (f"  {found[1][:120]}" if found[1] else ""), flush=True)
        return found

    def _read(self, path: Path) -> tuple[str, str]:
        try:
            doc: dict[str, Any] = json.loads(path.read_text())
        except (OSError, json.JSONDecodeError) as exc:
            return "error", f"no cell result ({type(exc).__name__})"
        if doc.get("install", {}).get("status") == "failed":
            tail = str(doc["install"].get("log_tail", "")).splitlines()
            return "install-failed", tail[-1] if tail else ""
        for r in doc["results"]:
            if (r["check"], r["model"], r["mode"], r["subject"]) == (
                    self.check, self.model, self.mode, self.subject):
                return r["verdict"], r["detail"] if r["verdict"] != "pass" else ""
        return "missing", "the cell produced no such result"


def run_bisect(b: Bisect, low: str, high: str, wheels: Path) -> dict[str, Any]:
    """Binary search for the first release whose verdict differs from `low`'s."""
    start = time.perf_counter()
    versions = releases("mlx-lm", low, high)
    if len(versions) < 2:
        raise ValueError(f"fewer than two releases between {low} and {high}")
    print(f"[bisect] {len(versions)} releases from {versions[0]} to {versions[-1]}", flush=True)
    b.work.mkdir(parents=True, exist_ok=True)
    matrix_file = b.write_matrix(versions, wheels)
    lo, hi = 0, len(versions) - 1
    base = b.verdict(versions[lo], matrix_file)[0]
    boundary = None
    if b.verdict(versions[hi], matrix_file)[0] != base:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if b.verdict(versions[mid], matrix_file)[0] == base:
                lo = mid
            else:
                hi = mid
        boundary = versions[hi]
    return {"check": b.check, "model": b.model, "mode": b.mode, "subject": b.subject,
            "range": [versions[0], versions[-1]], "candidates": versions,
            "boundary": boundary, "last_same": versions[lo] if boundary else None,
            "visited": {v: {"verdict": s, "detail": d} for v, (s, d) in b.seen.items()},
            "seconds": round(time.perf_counter() - start, 1)}
