"""`mlxcompat bisect --axis subject`: the first release of a subject family (mlxcompat.families)
whose verdict on one cell differs from the lower bound's.

    mlxcompat bisect --axis subject --subject vllm-mlx --cell mlx-lm-0.30.5 \\
        --check patch-status --role mamba --between 0.2.1 0.6.0

The cell keeps its pins; each visited release is a subject of a generated matrix (installed
`--no-deps` like every subject, with the entry points its release ships) and runs alone in
that cell's venv (`--subjects <member>`). A release whose entry points' modules are
byte-identical to a visited one's (read from the wheels) takes that finding without a run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.version import Version

from mlxcompat.bisection import FLAG, UNDECIDABLE, Bisect, BisectError, _run, scratch_matrix
from mlxcompat.pypi import releases, wheel_for
from mlxcompat.sharing import subject_key, wheel_reader


@dataclass
class SubjectBisect(Bisect):
    cell: str = ""
    keys: dict[str, str | None] = field(default_factory=dict)

    @property
    def family(self) -> Any:
        return self.matrix.families[self.subject]

    def cell_id(self, version: str) -> str:
        return self.cell

    def member(self, version: str) -> str:
        return f"{self.family.name}-{version}"

    def candidates(self, low: str, high: str, wheels: Path) -> list[str]:
        found = releases(self.family.package, low, high)
        if len(found) < 2:
            raise BisectError(f"fewer than two releases of {self.family.package} between "
                              f"{low} and {high}")
        for v in found:
            eps = self.family.entry_points_of(v)
            self.keys[v] = subject_key(eps, wheel_reader(
                wheel_for(self.family.package, v, wheels))) if eps else None
        return found

    def write_matrix(self, versions: list[str], wheels: Path) -> Path:
        base = self.matrix.cell(self.cell)
        if base.resolve or base.sources:
            raise BisectError(f"{self.cell} is not pinned to releases; pick a pinned cell")
        subjects = {self.member(v): {"install": [f"{self.family.package}=={v}"],
                                     "entry_points": self.family.entry_points_of(v)}
                    for v in versions}
        return scratch_matrix(self.work, self.matrix, {
            "subjects": subjects,
            "cells": [{"id": self.cell, **base.pins, "models": [self.model]
                       if self.model else list(base.models), "subjects": list(subjects)}]})

    def verdict(self, version: str, matrix_file: Path) -> tuple[str, str]:
        if version in self.seen:
            return self.seen[version]
        twin = next((v for v in self.seen if self.keys.get(v) is not None
                     and self.keys.get(v) == self.keys.get(version)), None)
        if twin is not None:
            finding = self.seen[twin][0]
            self.seen[version] = (finding, f"entry points' modules identical to {twin}'s")
            print(f"[bisect] {self.subject} {version}: {finding} (same modules as {twin})")
            return self.seen[version]
        raw = self.work / "raw"
        out = raw / f"{self.cell}.json"
        out.unlink(missing_ok=True)
        env = {**os.environ, "MLXCOMPAT_MATRIX": str(matrix_file),
               "MLXCOMPAT_RAW": str(raw), "MLXCOMPAT_LABEL": "", "MLXCOMPAT_SKIP_REPORT": "1"}
        cmd = ["nox", "-f", str(self.noxfile), "-r", "-s", f"matrix({self.cell})", "--",
               f"--subjects={self.member(version)}", f"--checks={self.check}",
               *(f"--{FLAG[k]}={v}" for k, v in self.where.items()), "--bench=off"]
        code, tail = _run(cmd, self.noxfile.parent, env, self.work / f"nox-{version}.log")
        found = self._read(out, self.member(version))
        if code != 0 and found[0] in UNDECIDABLE:
            found = ("no-result", f"nox exited {code}: {tail}")
        self.seen[version] = found
        print(f"[bisect] {self.subject} {version}: {found[0]}"
              + (f"  {found[1][:120]}" if found[1] else ""), flush=True)
        return found


def subject_result(b: SubjectBisect, result: dict[str, Any]) -> dict[str, Any]:
    """The bisect result, with the cell it ran in and the releases sorted."""
    result["cell"] = b.cell
    result["visited"] = dict(sorted(result["visited"].items(), key=lambda kv: Version(kv[0])))
    return result
