"""The report's throughput tables: a llama-bench-style table of the newest release per
backend (tok/s per subject, speedup, paired overhead against `none`) — a batching curve when
that cell measured several batch sizes —, mlxcompat's prefill cost on mixed-length prompts
per release, and every row for the details. CPU and GPU figures are never compared. A cell
with rows of two profiles (its `nox -s curve` joined) names each row's profile.

Speedup: batched decode tok/s over the same model's decode tok/s one prompt at a time
(`generate_step`, subject `none`, same cell, dtype and prompt shape)."""

from __future__ import annotations

from dataclasses import dataclass

from mlxcompat.records.bench import FailedBench, MeasuredBench, SkippedBench, Spread
from mlxcompat.records.names import UPSTREAM
from mlxcompat.records.report import CompatDoc, ReportCell
from mlxcompat.report.aggregate import cell_order
from mlxcompat.report.tables import column_label, comparability

SHORT = {"bfloat16": "bf16", "float16": "fp16"}


@dataclass
class BenchLine:
    """One throughput row as the report shows it."""

    cell: str
    release: str
    backend: str
    device: str
    model: str  # with its dtype when not float32 and its prompt shape when mixed
    subject: str
    batch: int
    measured: MeasuredBench | None
    note: str
    prompts: str = "uniform"

    @property
    def tok_s(self) -> str:
        return fmt_tok_s(self.measured.gen_tok_s) if self.measured else ""

    @property
    def overhead_text(self) -> str:
        m = self.measured
        return m.overhead.text if m is not None and m.overhead is not None else ""


def fmt_tok_s(gen: Spread) -> str:
    if not gen.rounds or gen.median is None:
        return ""
    ci = f" ({gen.ci95[0]:,.0f}–{gen.ci95[1]:,.0f})" if len(gen.ci95) == 2 else ""
    return f"{gen.median:,.0f}{ci}"


def bench_rows(report: CompatDoc) -> list[BenchLine]:
    """Throughput rows in cell order, with release, backend and a comparability note."""
    cells = {c.cell: c for c in report.cells}
    order = {name: i for i, name in enumerate(cells)}
    profiles: dict[str, set[str]] = {}
    for b in report.bench:
        profiles.setdefault(b.cell, set()).add(b.row.profile)
    lines = []
    for b in sorted(report.bench, key=lambda b: (order.get(b.cell, 0), b.row.model, b.row.batch,
                                                 b.row.subject)):
        cell = cells.get(b.cell)
        if cell is None:
            continue
        row = b.row
        note = {FailedBench: getattr(row, "detail", ""),
                SkippedBench: getattr(row, "reason", "")}.get(type(row), "")
        tags = [t for t in (SHORT.get(row.dtype, row.dtype) if row.dtype != "float32" else "",
                            "mixed" if row.prompts == "mixed" else "",
                            row.profile if len(profiles[b.cell]) > 1 else "") if t]
        model = f"{row.model} ({', '.join(tags)})" if tags else row.model
        measured = row if isinstance(row, MeasuredBench) else None
        if measured is not None and measured.calibration and measured.calibration.noisy:
            note = f"noisy: {measured.calibration.why}"
        lines.append(BenchLine(b.cell, column_label(cell), row.backend or cell.env.backend,
                               cell.env.device_name, model, row.subject, row.batch,
                               measured, note or comparability(cell.env), row.prompts))
    return lines


def by_backend(rows: list[BenchLine]) -> dict[str, list[BenchLine]]:
    groups: dict[str, list[BenchLine]] = {}
    for row in rows:
        groups.setdefault(row.backend, []).append(row)
    return groups


def newest_cell(report: CompatDoc, rows: list[BenchLine]) -> ReportCell | None:
    """The newest pinned mlx-lm cell among `rows` (the compact table's release)."""
    cells = [c for c in report.cells if any(r.cell == c.cell for r in rows)
             and c.base.startswith("mlx-lm-")]
    return max(cells, key=cell_order) if cells else None


def compact(report: CompatDoc, rows: list[BenchLine]) -> tuple[str, list[str], list[list[str]]]:
    """(release, headers, rows) of the llama-bench-style table for one backend."""
    cell = newest_cell(report, rows)
    if cell is None:
        return "", [], []
    mine = [r for r in rows if r.cell == cell.cell and r.measured is not None]
    subjects = list(dict.fromkeys(r.subject for r in mine))
    headers = ["model", "batch", *(f"{s} tok/s" for s in subjects), "speedup (none)",
               *(f"{s} vs none" for s in subjects if s != UPSTREAM)]
    body = []
    for key in dict.fromkeys((r.model, r.batch) for r in mine):
        by_subject = {r.subject: r for r in mine if (r.model, r.batch) == key}
        none = by_subject.get(UPSTREAM)
        speed = none.measured.speedup if none and none.measured else None
        body.append([key[0], str(key[1]),
                     *(by_subject[s].tok_s if s in by_subject else "" for s in subjects),
                     f"{speed:.2f}×" if speed is not None else "",
                     *(by_subject[s].overhead_text if s in by_subject else "" for s in subjects
                       if s != UPSTREAM)])
    return mine[0].release if mine else column_label(cell), headers, body


def full_rows(rows: list[BenchLine]) -> tuple[list[str], list[list[str]]]:
    headers = ["release", "model", "subject", "batch", "decode tok/s (median, 95% CI)",
               "spread", "prefill tok/s", "rounds", "first/last round", "speedup", "vs none",
               "prefill vs none", "peak MB", "note"]
    body = []
    for b in rows:
        m = b.measured
        gen = m.gen_tok_s if m else Spread()
        first = m.first_round_ratio if m else None
        body.append([b.release, b.model, b.subject, str(b.batch), b.tok_s,
                     f"{gen.spread:.1%}" if gen.spread is not None else "",
                     fmt_tok_s(m.prefill_tok_s) if m else "",
                     str(gen.rounds or ""), f"{first:.2f}" if first is not None else "",
                     f"{m.speedup:.2f}×" if m and m.speedup is not None else "",
                     b.overhead_text,
                     m.prefill_overhead.text if m and m.prefill_overhead else "",
                     f"{m.peak_memory_mb:.1f}" if m and m.peak_memory_mb is not None else "",
                     b.note])
    return headers, body


def prefill_cost(rows: list[BenchLine], subject: str = "mlxcompat"
                 ) -> tuple[list[str], list[list[str]]]:
    """`subject`'s prefill tok/s against none's on mixed-length prompts, per release: what
    its segmented prefill costs where padding differs row by row."""
    headers = ["release", "model", "batch", f"{subject} prefill vs none (95% CI)",
               f"{subject} decode vs none"]
    body = [[b.release, b.model, str(b.batch), b.measured.prefill_overhead.text,
             b.overhead_text] for b in rows
            if b.subject == subject and b.prompts == "mixed" and b.measured is not None
            and b.measured.prefill_overhead is not None]
    return headers, body
