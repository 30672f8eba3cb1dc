"""Does a cell's JSON hold a row for every case today's harness would run there?

A file can be complete for the run that wrote it and still fall short of today's harness: a
run that predates a scenario (the rows it would produce are simply absent), or one narrowed by
`--checks` / `--modes`. Both would read as a clean column, so both are missing lines. The
expected cases come from the catalog itself (`CheckSpec.cases`), the same call the suite makes
in each subject's process, with the subjects and models the matrix lists for the cell on its
runner label; no model is built and nothing is imported beyond the harness's pure parts.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mlxcompat.checks.catalog import cases_of
from mlxcompat.checks.spec import Case, Selection
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.names import case_key

SHOWN = 4  # kinds of lost cases named in a missing line before "…"


def narrowed(doc: CellDoc, matrix: Any, cell_id: str) -> list[str]:
    """The checks and key filters a cell's defaults include but its run left out."""
    asked = matrix.run_checks(matrix.cell(cell_id))
    ran = doc.checks or list(asked)
    left = [f"check {c}" for c in asked if c not in ran]
    left += [f"only {key} {', '.join(values)}" for key, values in sorted(doc.only.items())]
    return left


def expected_cases(matrix: Any, cell_id: str, label: str, checks: tuple[str, ...] = (),
                   only: dict[str, list[str]] | None = None) -> dict[str, list[Case]]:
    """subject -> the cases its process collects in this cell on this runner label, for
    `checks` (default: the cell's) and the key filters `only`, as the runner selects them."""
    cell = matrix.cell(cell_id)
    subjects, models = matrix.expected(cell, label)
    asked = checks or matrix.run_checks(cell)
    keys = tuple((k, tuple(v)) for k, v in sorted((only or {}).items()))
    return {name: cases_of(Selection(name, matrix.registry, tuple(models),
                                     tuple(matrix.subjects[name].entry_points),
                                     bool(matrix.subjects[name].install), asked, keys))
            for name in subjects}


def lost_cases(doc: CellDoc, matrix: Any, cell_id: str, label: str) -> Counter[str]:
    """'subject check scenario…' -> how many cases of that kind have no row, for the checks
    the run was asked for (a narrowed run is `narrowed`'s business)."""
    present: dict[str, set[tuple[str, ...]]] = {}
    for row in doc.results:
        present.setdefault(row.subject, set()).add(case_key(row))
    lost: Counter[str] = Counter()
    for name, cases in expected_cases(matrix, cell_id, label, tuple(doc.checks),
                                      doc.only).items():
        for case in cases:
            if case_key(case) not in present.get(name, set()):
                what = " ".join(p for p in (case.check, case.scenario or case.mode) if p)
                lost[f"{name} {what}"] += 1
    return lost


def uncovered_cases(doc: CellDoc, matrix: Any, cell_id: str, label: str,
                    partial: bool) -> list[str]:
    """Missing lines for `doc`: cases without a row, and (in a run of the whole matrix, not
    `partial`) the checks a narrowed run left out."""
    if not doc.install.ok:
        return []  # the failed install is reported as such
    lines = []
    lost = lost_cases(doc, matrix, cell_id, label)
    if lost:
        kinds = [f"{what} ×{n}" for what, n in sorted(lost.items())]
        shown = ", ".join(kinds[:SHOWN]) + (", …" if len(kinds) > SHOWN else "")
        lines.append(f"{doc.cell}: {sum(lost.values())} case(s) today's harness runs have no "
                     f"row ({shown}; run by {doc.harness or 'an unknown harness'}); rerun the cell")
    left = narrowed(doc, matrix, cell_id)
    if left and not partial:
        lines.append(f"{doc.cell}: the run left out {', '.join(left)} (narrowed by --checks or "
                     "a filter); a report of the whole matrix needs the cell's full run")
    return lines
