"""The report's detail tables as plain data, rendered alike by the Markdown and HTML writers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlxcompat.report.front import release_of

GLYPH = {"pass": "✅", "fail": "❌", "error": "💥", "skip": "➖"}
# Plain-text marks for HTML, coloured by CSS: they render without an emoji font.
MARK = {"pass": "✓", "fail": "✗", "error": "E", "skip": "–"}
STATUS_GLYPH = {"applied": "🩹", "skipped": "⏭", "not-applicable": "∅", "unavailable": "➖",
                "error": "💥"}
# check group -> the row keys that identify a line in its matrix
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("install", ("subject",)),
    ("run", ("subject",)),
    ("import", ("mode", "subject")),
    ("patch-status", ("mode", "subject")),
    ("idempotence", ("mode", "subject")),
    ("parity", ("model", "mode", "subject")),
    ("cache-contract", ("model", "subject")),
    ("glm4v", ("mode", "subject")),
    ("upstream-suite", ("mode", "subject")),
)


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
    def text(self) -> str:
        return f"{GLYPH.get(self.verdict, '?')}{self.suffix}"

    @property
    def mark(self) -> str:
        return f"{MARK.get(self.verdict, '?')}{self.suffix}"


@dataclass
class Table:
    title: str
    keys: tuple[str, ...]
    columns: list[str]
    rows: list[tuple[tuple[str, ...], list[Entry | None]]] = field(default_factory=list)


def column_label(cell: dict[str, Any]) -> str:
    release = release_of(cell)[0]
    return f"{release} @{cell['label']}" if cell.get("label") else release


def tooltip(row: dict[str, Any]) -> str:
    delta = (row.get("metrics") or {}).get("max_abs_delta")
    head = f"Δ {delta:.2e}; " if isinstance(delta, int | float) and row["verdict"] == "fail" \
        else ""
    why = f" [{row['why']}]" if row.get("why") else ""
    return f"{row['verdict']}: {head}{row['detail']}{why}"[:400]


def verdict_tables(report: dict[str, Any], notes: dict[int, int]) -> list[Table]:
    """One table per check group: rows = its keys, columns = cells that have such results.

    A failure's note is the footnote of the expectation that covers it (one per
    expectation, not per result).
    """
    cells = report["cells"]
    tables = []
    for group, keys in GROUPS:
        rows = [r for r in report["results"] if r["check"] == group]
        if not rows:
            continue
        present = [c for c in cells if any(r["cell"] == c["cell"] for r in rows)]
        index = {c["cell"]: i for i, c in enumerate(present)}
        table = Table(group, keys, [column_label(c) for c in present])
        lines: dict[tuple[str, ...], list[Entry | None]] = {}
        for r in rows:
            key = tuple(str(r.get(k, "")) for k in keys)
            line = lines.setdefault(key, [None] * len(present))
            note = None
            if r["verdict"] in ("fail", "error") and r.get("expectation") is not None:
                note = notes.setdefault(r["expectation"], len(notes) + 1)
            line[index[r["cell"]]] = Entry(r["verdict"], r["outcome"], note, tooltip(r))
        table.rows = sorted(lines.items())
        tables.append(table)
    return tables


def patch_table(report: dict[str, Any]) -> Table:
    """Observed patch status per subject and role; a self-report that disagrees is marked."""
    cells = report["cells"]
    index = {c["cell"]: i for i, c in enumerate(cells)}
    table = Table("patch status", ("subject", "patch"), [column_label(c) for c in cells])
    lines: dict[tuple[str, ...], list[Any]] = {}
    for p in report["patches"]:
        line = lines.setdefault((p["subject"], p["patch"]), [None] * len(cells))
        line[index[p["cell"]]] = p["status"] + ("" if p.get("agrees", True) else
                                               f" (says {'/'.join(p.get('claim', []))})")
    table.rows = sorted(lines.items())
    return table


def comparability(env: dict[str, Any]) -> str:
    """Why a cell's throughput is not comparable to real hardware ('' when it is)."""
    if env.get("forced_cpu"):
        return "GPU passed over for the CPU: " + str(env["forced_cpu"])
    if "paravirtual" in str(env.get("device_name", "")).lower():
        return "paravirtual GPU: not comparable to real hardware"
    return ""


ENV_KEYS = ("mlx", "mlx-lm", "mlx-vlm", "transformers")


def env_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for c in report["cells"]:
        packages = c["env"].get("packages", {})
        rows.append({"cell": c["cell"], **{k: packages.get(k, "") for k in ENV_KEYS},
                     "backend": c["env"].get("backend", ""),
                     "device": c["env"].get("device_name", ""),
                     "install": c["install"].get("status", ""),
                     "install_s": c["install"].get("seconds")})
    return rows
