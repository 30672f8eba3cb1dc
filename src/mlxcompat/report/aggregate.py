"""compat.json from cell documents: every row placed in its cell and judged.

Expectations are re-derived from the current matrix.yaml, so a new known issue needs no
rerun. A result an expectation covers is `expected` only within that entry's bounds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from packaging.version import InvalidVersion, Version

from mlxcompat.matrix import Matrix
from mlxcompat.records.bench import BenchRow
from mlxcompat.records.cell import CellDoc
from mlxcompat.records.names import BAD, VERDICTS, split_cell_name
from mlxcompat.records.report import (
    CompatDoc,
    ExpectationUse,
    Outcome,
    ReportBench,
    ReportCell,
    ReportPatch,
    ReportRow,
)
from mlxcompat.records.rows import ResultRow
from mlxcompat.report.fault import judge_faults

REPORT_SCHEMA = 3


def summary_line(doc: CellDoc) -> str:
    counts = Counter(r.verdict for r in doc.results)
    return f"{doc.cell}: " + " ".join(f"{v}={counts.get(v, 0)}" for v in VERDICTS)


def _pins(doc: CellDoc, matrix: Matrix | None) -> dict[str, str]:
    """A pinned cell's pins; a resolved cell's (and a stray's) from what it installed."""
    base = split_cell_name(doc.cell)[0]
    packages = doc.env.packages
    if matrix is not None:
        for cell in matrix.cells:
            if cell.id == base and cell.pins:  # a package built from source: as installed
                return {**cell.pins, **{k: packages[k] for k in cell.sources if k in packages}}
    return {k: packages[k] for k in ("mlx-lm", "mlx", "mlx-vlm") if k in packages}


def cell_order(cell: ReportCell) -> tuple[Any, ...]:
    """mlx-lm cells by mlx-lm version, then mlx-vlm cells by mlx-vlm version; labels last."""
    axis = "mlx-vlm" if "mlx-vlm" in cell.pins else "mlx-lm"
    try:
        version: Any = Version(cell.pins.get(axis, "0"))
    except InvalidVersion:
        version = Version("0")
    return (cell.label, axis == "mlx-vlm", version, cell.cell)


def outcome(row: ResultRow, base: str, matrix: Matrix | None, doc: CellDoc) -> Outcome:
    """How `row` stands against the expectations (none covering: pass and skip are
    expected, fail and error are not)."""
    exp = matrix.expectation_for(row, base, doc.env.packages, doc.env) if matrix else None
    if exp is not None:
        holds, why = exp.holds(row)
        return Outcome(expected=holds, expectation=exp.index, reason=exp.reason,
                       link=exp.link, why=why)
    if row.verdict in BAD:
        return Outcome(expected=False, why=f"{row.verdict} and no expectation covers it")
    return Outcome(expected=True)


def _install_row(doc: CellDoc) -> ResultRow | None:
    """A failed install is one `install` error row of the cell (no subject ran)."""
    if doc.install.ok:
        return None
    tail = doc.install.log_tail.strip().splitlines()
    return ResultRow.error("install", "", "install failed: "
                           + (tail[-1] if tail else doc.install.error),
                           seconds=doc.install.seconds or 0.0)


def _placed(doc: CellDoc, matrix: Matrix | None) -> list[ReportRow]:
    base, label = split_cell_name(doc.cell)
    rows = [r for r in (_install_row(doc), *doc.results) if r is not None]
    return [ReportRow(**r.model_dump(), cell=doc.cell, base=base, label=label,
                      backend=doc.env.backend, outcome=outcome(r, base, matrix, doc))
            for r in rows]


def _bench(doc: CellDoc, row: BenchRow) -> ReportBench:
    return ReportBench(cell=doc.cell, fingerprint=doc.env.fingerprint, row=row)


def aggregate(docs: list[CellDoc], matrix: Matrix | None) -> CompatDoc:
    """The compat.json document (without the load problems and baseline changes)."""
    report = CompatDoc()
    for doc in docs:
        base, label = split_cell_name(doc.cell)
        report.cells.append(ReportCell(cell=doc.cell, base=base, label=label,
                                       pins=_pins(doc, matrix), env=doc.env,
                                       install=doc.install, subjects=doc.subjects,
                                       run_id=doc.run_id, harness=doc.harness,
                                       finished=doc.finished))
        report.results += _placed(doc, matrix)
        report.patches += [ReportPatch(**p.model_dump(), cell=doc.cell) for p in doc.patches]
        report.bench += [_bench(doc, b) for b in doc.bench]
    judge_faults(report.results)
    report.cells.sort(key=cell_order)
    order = {c.cell: i for i, c in enumerate(report.cells)}
    report.results.sort(key=lambda r: (order[r.cell], *r.key()))
    counts = Counter(r.verdict for r in report.results)
    report.counts = {v: counts.get(v, 0) for v in VERDICTS}
    report.unexpected = sum(1 for r in report.results if not r.outcome.expected)
    report.expected_failures = sum(1 for r in report.results
                                   if r.outcome.expected and r.verdict in BAD)
    report.install_failed = [c.cell for c in report.cells if not c.install.ok]
    report.expectations = expectation_use(report.results, matrix)
    return report


def expectation_use(results: list[ReportRow], matrix: Matrix | None) -> list[ExpectationUse]:
    """Every expectation with the rows it covered (a stale one covered none)."""
    if matrix is None:
        return []
    used = Counter(r.outcome.expectation for r in results if r.outcome.expectation is not None)
    broken = Counter(r.outcome.expectation for r in results
                     if r.outcome.expectation is not None and not r.outcome.expected)
    return [ExpectationUse(index=e.index, label=e.label(), verdict=e.verdict, reason=e.reason,
                           link=e.link, open=e.open, covered=used.get(e.index, 0),
                           outside_bounds=broken.get(e.index, 0)) for e in matrix.expectations]
