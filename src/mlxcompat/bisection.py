"""`mlxcompat bisect`: the first mlx-lm (or mlx-vlm) release whose verdict differs from the
lower bound's (`--axis subject`: the first release of a subject family, bisect_subjects.py).

Candidates are all PyPI releases in the range (yanked and pre-releases skipped), not just the
matrix cells. Each visited release becomes a cell of a generated matrix file pinned to the mlx
floor its wheel declares (on the mlx-vlm axis: beside the mlx-lm of the matrix's nearest
mlx-vlm cell, with the higher of both mlx floors), built and run through the project's
noxfile, so venvs of the main matrix (same cell id, same pins) are reused. It fails loudly:
unknown names, a nox run that fails or writes nothing, and a bound where the model does not
exist are errors that say why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import zipfile
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from packaging.version import Version

from mlxcompat.checks.catalog import CATALOG, bisectable
from mlxcompat.matrix import SCHEMA, Matrix, MatrixError
from mlxcompat.pypi import releases, wheel_for
from mlxcompat.records.base import RecordError
from mlxcompat.records.cell import read_cell
from mlxcompat.registry import builtin_document
from mlxcompat.releases import mlx_floor
from mlxcompat.runplan import FILTERS

# A finding is a verdict, or one of these, which decide nothing.
UNDECIDABLE = ("install-failed", "missing", "skip", "no-result")
FLAG = {key: flag for flag, key in FILTERS.items()}  # mode -> modes, ...


class BisectError(RuntimeError):
    """The search cannot go on; the message says why and what to do."""


def validate(matrix: Matrix, check: str, model: str, where: dict[str, str],
             subject: str) -> None:
    """Unknown names fail with the valid ones; `where` maps row keys (mode, role, scenario,
    path) to the value the search follows."""
    if check not in bisectable():
        raise MatrixError(f"unknown check {check!r}; valid: {', '.join(bisectable())}")
    if model and model not in matrix.registry.models:
        raise MatrixError(f"unknown model {model!r}; valid: {', '.join(matrix.registry.models)}")
    values = CATALOG[check].values(matrix.registry)
    for key, value in where.items():
        if key not in values:
            raise MatrixError(f"{check} rows have no {key}; they have: "
                              f"{', '.join(values) or 'no keys'}")
        allowed = values[key]
        if allowed is not None and value not in allowed:
            raise MatrixError(f"unknown {key} {value!r} of {check}; valid: {', '.join(allowed)}")
    if subject not in matrix.subjects and subject not in matrix.families:
        raise MatrixError(f"unknown subject {subject!r}; valid: {', '.join(matrix.subjects)}")


VLM_MODEL_FILES = {"glm4v_moe": "mlx_vlm/models/glm4v_moe/language.py"}


def model_file(model: str, axis: str = "mlx-lm") -> str | None:
    """The file a built-in model needs in the axis's wheel (None for a project's own model)."""
    if axis == "mlx-vlm":
        return VLM_MODEL_FILES.get(model)
    from mlxcompat.models.lm import LM_CONFIGS

    config = LM_CONFIGS.get(model)
    return f"mlx_lm/models/{config['model_type']}.py" if config else None


def has_file(wheel: Path, name: str) -> bool:
    with zipfile.ZipFile(wheel) as z:
        return name in z.namelist()


def scratch_matrix(work: Path, matrix: Matrix, parts: dict[str, Any]) -> Path:
    """`work/matrix.yaml`: the matrix a bisection runs (throughput off, the same backends as
    `matrix`) with its own subjects, cells and, where given, models and roles."""
    doc = {"schema": SCHEMA, "settings": {"bench": {"default": "off"}},
           "backends": {n: {"device": b.device, "requirement": b.requirement}
                        for n, b in matrix.backends.items()}, **parts}
    path = work / "matrix.yaml"
    path.write_text(yaml.safe_dump(json.loads(json.dumps(doc)), sort_keys=False))
    return path


@dataclass
class Bisect:
    matrix: Matrix
    check: str
    model: str
    where: dict[str, str]  # row key -> value: e.g. {"mode": "history"}
    subject: str
    work: Path
    noxfile: Path
    axis: str = "mlx-lm"
    seen: dict[str, tuple[str, str]] = field(default_factory=dict)

    def cell_id(self, version: str) -> str:
        return f"{self.axis}-{version}"

    def candidates(self, low: str, high: str, wheels: Path) -> list[str]:
        """Every PyPI release of the axis from `low` to `high` where the model exists."""
        versions = releases(self.axis, low, high)
        if len(versions) < 2:
            raise BisectError(f"fewer than two releases between {low} and {high}")
        return _narrow(self, versions, wheels)

    def _cell(self, version: str, wheels: Path) -> dict[str, Any]:
        if self.axis == "mlx-lm":
            return {"mlx-lm": version, "mlx": mlx_floor(wheel_for("mlx-lm", version, wheels)),
                    "models": [self.model], "subjects": [self.subject]}
        lm = self.beside(version)
        floor = max((mlx_floor(wheel_for(p, v, wheels)) for p, v in (("mlx-lm", lm),
                                                                     ("mlx-vlm", version))),
                    key=Version)
        return {"mlx-vlm": version, "mlx-lm": lm, "mlx": floor,
                "models": [self.model], "subjects": [self.subject]}

    def beside(self, version: str) -> str:
        """The mlx-lm an mlx-vlm release runs beside: that of the matrix's nearest mlx-vlm
        cell at or above it (else the newest)."""
        cells = sorted((c for c in self.matrix.cells if "mlx-vlm" in c.pins),
                       key=lambda c: Version(c.pins["mlx-vlm"]))
        if not cells:
            raise BisectError("the matrix has no mlx-vlm cell to take an mlx-lm pin from")
        above = [c for c in cells if Version(c.pins["mlx-vlm"]) >= Version(version)]
        return (above[0] if above else cells[-1]).pins["mlx-lm"]

    def write_matrix(self, versions: list[str], wheels: Path) -> Path:
        cells = [self._cell(v, wheels) for v in versions]
        spec = self.matrix.subjects[self.subject]
        builtin = builtin_document()
        own_models = {n: {k: v for k, v in asdict(m).items() if k != "name"}
                      for n, m in self.matrix.registry.models.items()
                      if n not in builtin["models"]}
        own_roles = {n: {k: v for k, v in asdict(r).items() if k != "name"}
                     for n, r in self.matrix.registry.roles.items() if n not in builtin["roles"]}
        install = [str((self.matrix.source_dir() / p).resolve()) if p in spec.paths else p
                   for p in spec.install]
        return scratch_matrix(self.work, self.matrix, {
            "subjects": {self.subject: {"install": install, "entry_points": spec.entry_points}},
            "models": own_models, "roles": own_roles, "cells": cells})

    def verdict(self, version: str, matrix_file: Path) -> tuple[str, str]:
        """Run one release's cell (building or reusing its venv) and read the verdict."""
        if version in self.seen:
            return self.seen[version]
        cell = self.cell_id(version)
        raw = self.work / "raw"
        out = raw / f"{cell}.json"
        out.unlink(missing_ok=True)  # a stale file must never stand in for this run
        env = {**os.environ, "MLXCOMPAT_MATRIX": str(matrix_file), "MLXCOMPAT_RAW": str(raw),
               "MLXCOMPAT_LABEL": "", "MLXCOMPAT_SKIP_REPORT": "1"}
        cmd = ["nox", "-f", str(self.noxfile), "-r", "-s", f"matrix({cell})", "--",
               f"--checks={self.check}",
               *(f"--{FLAG[key]}={value}" for key, value in self.where.items()), "--bench=off"]
        start = time.perf_counter()
        code, tail = _run(cmd, self.noxfile.parent, env, self.work / f"nox-{version}.log")
        found = self._read(out)
        if code != 0 and found[0] in UNDECIDABLE:
            found = ("no-result", f"nox exited {code}: {tail}")
        self.seen[version] = found
        print(f"[bisect] {self.axis} {version}: {found[0]}  "
              f"({time.perf_counter() - start:.1f}s)"
              + (f"  {found[1][:120]}" if found[1] else ""), flush=True)
        return found

    def _read(self, path: Path, subject: str = "") -> tuple[str, str]:
        """(finding, detail) of the searched rows in one release's cell document."""
        subject = subject or self.subject
        try:
            doc = read_cell(path)
        except RecordError as exc:
            return "no-result", f"no cell result ({exc})"
        if not doc.install.ok:
            tail = doc.install.log_tail.splitlines()
            return "install-failed", tail[-1] if tail else doc.install.error
        found = [r for r in doc.results if (r.check, r.model, r.subject) == (
            self.check, self.model, subject)
            and all(getattr(r, k) == v for k, v in self.where.items())]
        if not found:
            return "missing", "the cell produced no such result"
        verdicts = sorted({r.verdict for r in found})
        finding = verdicts[0] if len(verdicts) == 1 else "/".join(verdicts)
        detail = next((r.detail for r in found if r.verdict != "pass"), "")
        return finding, detail


def _run(cmd: list[str], cwd: Path, env: dict[str, str], log: Path) -> tuple[int, str]:
    """Run nox in its own process group, output to `log`; stop it if we are interrupted."""
    log.parent.mkdir(parents=True, exist_ok=True)
    tail: deque[str] = deque(maxlen=6)
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        try:
            for line in proc.stdout:  # type: ignore[union-attr]
                fh.write(line)
                if line.strip():
                    tail.append(line.strip())
            code = proc.wait()
        except BaseException:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            raise
    return code, " | ".join(tail)


def _narrow(b: Bisect, versions: list[str], wheels: Path) -> list[str]:
    """Drop releases where the model does not exist yet; say so."""
    name = model_file(b.model, b.axis)
    if name is None:
        return versions
    present = [v for v in versions if has_file(wheel_for(b.axis, v, wheels), name)]
    if not present:
        raise BisectError(f"{b.model} exists in none of {versions[0]}–{versions[-1]}")
    if present[0] != versions[0]:
        print(f"[bisect] {b.model} first exists in {b.axis} {present[0]}; searching from there",
              flush=True)
    return present


def _decided(b: Bisect, version: str, found: tuple[str, str]) -> str:
    if found[0] in UNDECIDABLE:
        raise BisectError(f"{b.axis} {version} gives no verdict to compare ({found[0]}: "
                          f"{found[1][:200]}); see {b.work}/nox-{version}.log")
    return found[0]


def run_bisect(b: Bisect, low: str, high: str, wheels: Path) -> dict[str, Any]:
    """Binary search for the first release whose verdict differs from `low`'s."""
    start = time.perf_counter()
    versions = b.candidates(low, high, wheels)
    if len(versions) < 2:
        raise BisectError(f"{b.model} exists only in {versions[0]} within the range")
    print(f"[bisect] {len(versions)} releases from {versions[0]} to {versions[-1]}", flush=True)
    b.work.mkdir(parents=True, exist_ok=True)
    matrix_file = b.write_matrix(versions, wheels)
    lo, hi = 0, len(versions) - 1
    base = _decided(b, versions[lo], b.verdict(versions[lo], matrix_file))
    boundary = None
    if _decided(b, versions[hi], b.verdict(versions[hi], matrix_file)) != base:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if _decided(b, versions[mid], b.verdict(versions[mid], matrix_file)) == base:
                lo = mid
            else:
                hi = mid
        boundary = versions[hi]
    return {"axis": b.axis, "check": b.check, "model": b.model, **b.where, "subject": b.subject,
            "range": [versions[0], versions[-1]], "candidates": versions,
            "boundary": boundary, "last_same": versions[lo] if boundary else None,
            "visited": {v: {"finding": s, "detail": d} for v, (s, d) in b.seen.items()},
            "seconds": round(time.perf_counter() - start, 1)}
