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

from mlxcompat.checks.catalog import SPECS
from mlxcompat.checks.spec import Selection
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.names import KEYS

CASE_FIELDS = ("check", *KEYS)
SHOWN = 4  # kinds of lost cases named in a missing line before "…"


def narrowed(doc: CellDoc, matrix: Any, cell_id: str) -> list[str]:
    """The checks and key filters a cell's defaults include but its run left out."""
    asked = matrix.run_checks(matrix.cell(cell_id))
    ran = doc.checks or list(asked)
    left = [f"check {c}" for c in asked if c not in ran]
    left += [f"only {key} {', '.join(values)}" for key, values in sorted(doc.only.items())]
    return left


def lost_cases(doc: CellDoc, matrix: Any, cell_id: str, label: str) -> Counter[str]:
    """'subject check scenario…' -> how many cases of that kind have no row, for the checks
    the run was asked for (a narrowed run is `narrowed`'s business)."""
    cell = matrix.cell(cell_id)
    subjects, models = matrix.expected(cell, label)
    checks = tuple(doc.checks) or matrix.run_checks(cell)
    only = tuple((k, tuple(v)) for k, v in sorted(doc.only.items()))
    present: dict[str, set[tuple[str, ...]]] = {}
    for row in doc.results:
        present.setdefault(row.subject, set()).add(tuple(getattr(row, k) for k in CASE_FIELDS))
    lost: Counter[str] = Counter()
    for name in subjects:
        subject = matrix.subjects[name]
        chosen = Selection(name, matrix.registry, tuple(models), tuple(subject.entry_points),
                           bool(subject.install), checks, only)
        have = present.get(name, set())
        for spec in SPECS:
            if not spec.selectable:
                continue
            for case in spec.cases(chosen):
                if tuple(getattr(case, k) for k in CASE_FIELDS) not in have:
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
