"""The report's detail tables as plain data, rendered alike by the Markdown and HTML writers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlxcompat.checks.catalog import SPECS
from mlxcompat.records.cell import Environment
from mlxcompat.records.names import BAD
from mlxcompat.records.report import CompatDoc, ReportCell, ReportRow
from mlxcompat.report.columns import release_of

# Plain ASCII marks (colour is the second channel in HTML): no emoji font needed.
MARK = {"pass": "ok", "fail": "F", "error": "E", "skip": "-"}
STATUS_MARK = {"applied": "A", "skipped": "S", "not-applicable": "n/a", "error": "E"}
@dataclass
class Entry:
    verdict: str
    outcome: str
    note: int | None = None
    detail: str = ""

    @property
    def suffix(self) -> str:
        mark = "!" if self.outcome == "unexpected" else ""
        return mark + (f"[{self.note}]" if self.note else "")

    @property
    def mark(self) -> str:
        return f"{MARK.get(self.verdict, '?')}{self.suffix}"


@dataclass
class Table:
    title: str
    keys: tuple[str, ...]
    columns: list[str]
    rows: list[tuple[tuple[str, ...], list[Any]]] = field(default_factory=list)  # Entry or str


def cell_text(value: Any) -> str:
    """One table cell: no newlines, `|` escaped, HTML special characters entity-encoded."""
    text = " ".join(str(value if value is not None else "").split())
    for raw, safe in (("&", "&amp;"), ("<", "&lt;"), (">", "&gt;"), ("|", "\\|")):
        text = text.replace(raw, safe)
    return text


def table(headers: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(cell_text(h) for h in headers) + " |",
           "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell_text(v) for v in row) + " |" for row in rows]
    return [*out, ""]


def column_label(cell: ReportCell) -> str:
    release = release_of(cell)[0]
    return f"{release} @{cell.label}" if cell.label else release


def tooltip(row: ReportRow) -> str:
    head = f"Δ {row.delta:.2e}; " if row.delta is not None and row.verdict == "fail" else ""
    why = f" [{row.outcome.why}]" if row.outcome.why else ""
    return f"{row.verdict}: {head}{row.detail}{why}"[:400]


def verdict_tables(report: CompatDoc, notes: dict[int, int]) -> list[Table]:
    """One table per check (the catalog's order and keys): rows = its keys, columns = cells
    that have such results.

    A failure's note is the footnote of the expectation that covers it (one per
    expectation, not per result).
    """
    tables = []
    for spec in SPECS:
        rows = [r for r in report.results if r.check == spec.name]
        if not rows:
            continue
        present = [c for c in report.cells if any(r.cell == c.cell for r in rows)]
        index = {c.cell: i for i, c in enumerate(present)}
        table = Table(spec.name, spec.keys, [column_label(c) for c in present])
        lines: dict[tuple[str, ...], list[Entry | None]] = {}
        for r in rows:
            key = tuple(str(getattr(r, k)) for k in spec.keys)
            line = lines.setdefault(key, [None] * len(present))
            note = None
            if r.verdict in BAD and r.outcome.expectation is not None:
                note = notes.setdefault(r.outcome.expectation, len(notes) + 1)
            outcome = "expected" if r.outcome.expected else "unexpected"
            line[index[r.cell]] = Entry(r.verdict, outcome, note, tooltip(r))
        table.rows = sorted(lines.items())
        tables.append(table)
    return tables


def patch_table(report: CompatDoc) -> Table:
    """Observed patch status per subject and role; a self-report that disagrees is marked."""
    index = {c.cell: i for i, c in enumerate(report.cells)}
    table = Table("patch status", ("subject", "role"), [column_label(c) for c in report.cells])
    lines: dict[tuple[str, ...], list[Any]] = {}
    for p in report.patches:
        line = lines.setdefault((p.subject, p.role), [None] * len(report.cells))
        line[index[p.cell]] = p.observed + ("" if p.agrees else f" (says {'/'.join(p.claim)})")
    table.rows = sorted(lines.items())
    return table


def comparability(env: Environment) -> str:
    """Why a cell's throughput is not comparable to real hardware ('' when it is)."""
    if env.forced_cpu:
        return "GPU passed over for the CPU: " + env.forced_cpu
    if "paravirtual" in env.device_name.lower():
        return "paravirtual GPU: not comparable to real hardware"
    return ""


ENV_KEYS = ("mlx", "mlx-lm", "mlx-vlm", "transformers")


@dataclass
class EnvLine:
    cell: str
    packages: dict[str, str]
    backend: str
    device: str
    install: str
    install_s: float | None


def env_rows(report: CompatDoc) -> list[EnvLine]:
    return [EnvLine(c.cell, {k: c.env.packages.get(k, "") for k in ENV_KEYS}, c.env.backend,
                    c.env.device_name, "ok" if c.install.ok else "failed", c.install.seconds)
            for c in report.cells]
