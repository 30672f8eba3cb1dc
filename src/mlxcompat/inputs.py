"""What a cell's results depend on, hashed, and the one rule `--reuse` applies to them.

A subject is re-run only if one of its inputs changed: the cell's releases (pinned, what a
resolved cell resolved to, or what is installed), the backend, the runner label and the run's
selection, the harness's own source, the subject's entry points and what it installs (a
pinned requirement, or the tree hash of a local path; for this project's own patch modules,
the hash of their folder). nox asks the same rule before installing: a cell whose every
subject would be reused is not even installed.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from mlxcompat.matrix import SubjectSpec
from mlxcompat.records.cell import CellDoc, Inputs

RELEASES = ("mlx-lm", "mlx", "mlx-vlm")

PACKAGE = Path(__file__).resolve().parent
_SKIP_PARTS = {"__pycache__", ".git", ".nox", ".venv", "node_modules"}


def tree_hash(root: Path, exclude: tuple[Path, ...] = ()) -> str:
    """sha256 over the relative paths and contents of the files under `root`."""
    digest = hashlib.sha256()
    root = root.resolve()
    excluded = tuple(p.resolve() for p in exclude)
    files = sorted(p for p in root.rglob("*") if p.is_file()
                   and not (_SKIP_PARTS & set(p.relative_to(root).parts))
                   and not any(p.is_relative_to(e) for e in excluded)
                   and p.suffix not in (".pyc", ".pyo"))
    for path in files:
        digest.update(str(path.relative_to(root)).encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def harness_hash() -> str:
    """The harness itself, without the patch modules it tests (they are a subject's)."""
    return tree_hash(PACKAGE, exclude=(PACKAGE / "patches",))


def subject_inputs(subject: SubjectSpec, base: Path) -> dict[str, Any]:
    record: dict[str, Any] = {"entry_points": subject.entry_points,
                              "install": list(subject.requirements)}
    trees = {p: tree_hash((base / p).expanduser()) for p in subject.paths}
    if any(ep.startswith("mlxcompat.patches") for ep in subject.entry_points.values()):
        trees["mlxcompat.patches"] = tree_hash(PACKAGE / "patches")
    if trees:
        record["trees"] = trees
    return record


def cell_inputs(pins: dict[str, str], backend: str, label: str, selection: dict[str, Any],
                subjects: list[SubjectSpec], base: Path,
                sources: dict[str, str] | None = None) -> Inputs:
    """The inputs of one cell run: one digest for the cell, one per subject (`sources`: the
    commit or tree hash of each package built from source)."""
    releases = {k: pins[k] for k in RELEASES if k in pins}
    what: dict[str, Any] = {"pins": releases, "backend": backend, "label": label,
                            "selection": selection, "harness": harness_hash()}
    if sources:
        what["sources"] = dict(sorted(sources.items()))
    cell = digest(what)
    return Inputs(cell=cell, subjects={s.name: digest(subject_inputs(s, base))
                                       for s in subjects})


def reused_subjects(previous: CellDoc | None, inputs: Inputs) -> tuple[str, ...]:
    """Subjects whose previous rows stand for this run: the previous document is complete,
    its cell inputs are these, the subject's are too, and the subject finished (no `run`
    error row). Everything else runs."""
    if previous is None or not previous.complete or previous.inputs.cell != inputs.cell:
        return ()
    unfinished = {r.subject for r in previous.results if r.check == "run"}
    return tuple(name for name, value in inputs.subjects.items()
                 if previous.inputs.subjects.get(name) == value and name not in unfinished
                 and name in previous.subjects)


def digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()[:16]
