"""Read cell JSONs and decide which of them the report may use.

Fails closed: an unreadable, half-written, incomplete or future-schema file is a problem
line; a matrix cell a runner label should have but does not, or a cell file without a row for
every case today's harness runs there (report.coverage), is a missing line; a file that
belongs to no matrix cell (a `mlxcompat run --cell local` left behind) is listed and ignored,
never rendered as a column. Every problem and missing cell makes the report exit non-zero.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat.expectations import PINNED
from mlxcompat.records.base import RecordError
from mlxcompat.records.cell import CellDoc, read_cell, read_upstream
from mlxcompat.records.names import cell_name, split_cell_name
from mlxcompat.report.coverage import uncovered_cases


@dataclass
class LoadedCells:
    cells: list[CellDoc] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)


def _check(doc: CellDoc, name: str) -> str | None:
    if doc.install.ok and not doc.complete:
        return f"{name}: the run that wrote it did not finish (complete is not true)"
    if f"{doc.cell}.json" != name:
        return f"{name}: names cell {doc.cell!r}; a file's name must be its cell's"
    return None


def _read(path: Path) -> tuple[CellDoc | None, str | None]:
    try:
        doc = read_cell(path)
    except RecordError as exc:
        return None, str(exc)
    problem = _check(doc, path.name)
    return (None, problem) if problem else (doc, None)


def _add_upstream(doc: CellDoc, raw: Path, stem: str) -> list[str]:
    """Rows of `nox -t upstream` (`<cell>.upstream.<subject>.json`) join their cell's results."""
    problems = []
    for path in sorted(raw.glob(f"{stem}.upstream.*.json")):
        try:
            extra = read_upstream(path)
        except RecordError as exc:
            problems.append(str(exc))
            continue
        if extra.cell != doc.cell or not extra.results:
            problems.append(f"{path.name}: not an upstream-suite record of {doc.cell}")
            continue
        installed = doc.env.packages.get("mlx-lm")
        if extra.mlx_lm != installed:
            problems.append(f"{path.name}: ran mlx-lm {extra.mlx_lm}, the cell now has "
                            f"{installed}; rerun `nox -s \"upstream({doc.cell})\"`")
            continue
        doc.results = [*doc.results, *extra.results]
    return problems


def _add_curve(doc: CellDoc, raw: Path, stem: str) -> list[str]:
    """The bench rows of `nox -s curve` (`<cell>.curve.json`) join their cell's, when that run
    had the cell's releases and backend; a curve of other releases is a problem line."""
    path = raw / f"{stem}.curve.json"
    if not path.exists():
        return []
    try:
        curve = read_cell(path)
    except RecordError as exc:
        return [str(exc)]
    if curve.cell != doc.cell or not curve.complete or not curve.install.ok:
        return [f"{path.name}: not a finished curve run of {doc.cell}"]
    ran = {k: curve.env.packages.get(k) for k in PINNED}
    have = {k: doc.env.packages.get(k) for k in PINNED}
    if ran != have or curve.env.backend != doc.env.backend:
        return [f"{path.name}: ran {ran} on {curve.env.backend}, the cell now has {have} on "
                f"{doc.env.backend}; rerun `nox -s \"curve({split_cell_name(stem)[0]})\"`"]
    doc.bench = [*doc.bench, *curve.bench]
    return []


def _uncovered(doc: CellDoc, matrix: Any, cell_id: str, label: str) -> list[str]:
    """Subjects or models the matrix lists for this cell (on this runner) without one row in
    its JSON: a run narrowed by --subjects / --models does not cover the cell."""
    if not doc.install.ok:
        return []  # the failed install is reported as such
    subjects, models = matrix.expected(matrix.cell(cell_id), label)
    rows = doc.results
    lost = [f"subject {s}" for s in subjects if not any(r.subject == s for r in rows)]
    lost += [f"model {m}" for m in models if not any(r.model == m for r in rows)]
    return [f"{doc.cell}: no result for {', '.join(lost)} (the matrix lists them)"] if lost \
        else []


def absent_labels(present: list[str], asked: tuple[str, ...]) -> list[str]:
    """A runner label the run asked for (CI: `--labels`) without a single file: its jobs never
    ran or never uploaded, which must fail the report, not shrink it."""
    return [f"{label}: no result files at all (the run asked for this runner label)"
            for label in asked if label not in present]


def load_cells(raw: Path, matrix: Any = None, tag: str = "",
               only: tuple[str, ...] = (), labels: tuple[str, ...] = ()) -> LoadedCells:
    """Every `<cell>[@<label>].json` under `raw`, checked against the matrix's cells; each of
    `labels` must have files."""
    loaded = LoadedCells()
    if not raw.is_dir():
        loaded.problems.append(f"{raw}: no such folder; run `nox -s matrix` first")
        return loaded
    files = sorted(p for p in raw.glob("*.json")
                   if not p.name.endswith(".bench.json") and ".upstream." not in p.name
                   and not p.name.endswith(".curve.json"))
    if not files:
        loaded.problems.append(f"{raw}: no cell JSON files; run `nox -s matrix` first")
    known = {c.id for c in matrix.cells} if matrix is not None else None
    present: dict[str, set[str]] = {}
    broken: set[str] = set()
    for path in files:
        cell, label = split_cell_name(path.stem)
        if known is not None and cell not in known:
            loaded.strays.append(path.name)
            continue
        present.setdefault(label, set())
        doc, problem = _read(path)
        if problem:
            loaded.problems.append(problem)
            broken.add(path.stem)
            continue
        present[label].add(cell)
        assert doc is not None
        if matrix is not None:
            loaded.missing += _uncovered(doc, matrix, cell, label)
            loaded.missing += uncovered_cases(doc, matrix, cell, label, bool(tag or only))
        loaded.problems += _add_upstream(doc, raw, path.stem)
        loaded.problems += _add_curve(doc, raw, path.stem)
        loaded.cells.append(doc)
    loaded.labels = sorted(present)
    if matrix is not None:
        for label in loaded.labels:
            for cell in matrix.cells_for(label, tag, only):
                name = cell_name(cell.id, label)
                if cell.id not in present[label] and name not in broken:
                    loaded.missing.append(f"{name}: no result (the matrix lists this cell)")
    loaded.missing += absent_labels(loaded.labels, labels)
    return loaded
