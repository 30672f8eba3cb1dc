"""The report's tables as plain data, rendered alike by the Markdown and HTML writers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mlxcompat.results import strip_site_paths

GLYPH = {"pass": "✅", "fail": "❌", "error": "💥", "skip": "➖"}
# Plain-text marks for HTML, coloured by CSS: they render without an emoji font.
MARK = {"pass": "✓", "fail": "✗", "error": "E", "skip": "–"}
STATUS_GLYPH = {"applied": "🩹", "skipped": "⏭", "not-applicable": "∅", "unavailable": "➖",
                "error": "💥"}
# check group -> the row keys that identify a line in its matrix
GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("install", ()),
    ("run", ("subject",)),
    ("patch-status", ("mode", "subject")),
    ("parity", ("model", "mode", "subject")),
    ("cache-contract", ("model", "subject")),
    ("glm4v", ("mode", "subject")),
)
NOTE_CHARS = 300


@dataclass
class Entry:
    verdict: str
    outcome: str
    note: int | None = None

    @property
    def suffix(self) -> str:
        mark = "*" if self.outcome == "expected" and self.verdict in ("fail", "error") else ""
        mark = "!" if self.outcome == "unexpected" else mark
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


class Notes:
    """Footnotes, deduplicated by text, numbered in order of first use."""

    def __init__(self) -> None:
        self.texts: dict[str, int] = {}

    def add(self, text: str) -> int:
        text = " ".join(text.split())[:NOTE_CHARS]
        return self.texts.setdefault(text, len(self.texts) + 1)


def column_label(cell: dict[str, Any]) -> str:
    pins = cell["pins"]
    _, _, label = cell["cell"].partition("@")
    suffix = f" @{label}" if label else ""
    if "mlx-vlm" in pins:
        return f"vlm {pins['mlx-vlm']}{suffix}"
    return f"lm {pins.get('mlx-lm', cell['cell'])}{suffix}"


def _note_text(row: dict[str, Any]) -> str:
    return strip_site_paths(_raw_note(row))


def _raw_note(row: dict[str, Any]) -> str:
    delta = row["metrics"].get("max_abs_delta")
    head = f"{row['cell']} {row['check']} {row['model']} {row['mode']} {row['subject']}".split()
    reason = f" — known: {row['reason']}" if row.get("reason") else ""
    if row["verdict"] == "fail" and isinstance(delta, int | float):
        return f"Δ {delta:.2e}: {row['detail']}{reason}"
    return f"{row['detail'] or ' '.join(head)}{reason}"


def verdict_tables(report: dict[str, Any], notes: Notes) -> list[Table]:
    """One table per check group: rows = its keys, columns = cells that have such results."""
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
            note = notes.add(_note_text(r)) if r["verdict"] in ("fail", "error") else None
            line[index[r["cell"]]] = Entry(r["verdict"], r["outcome"], note)
        table.rows = sorted(lines.items())
        tables.append(table)
    return tables


def patch_table(report: dict[str, Any]) -> Table:
    cells = report["cells"]
    index = {c["cell"]: i for i, c in enumerate(cells)}
    table = Table("patch status", ("subject", "patch"), [column_label(c) for c in cells])
    lines: dict[tuple[str, ...], list[Any]] = {}
    for p in report["patches"]:
        line = lines.setdefault((p["subject"], p["patch"]), [None] * len(cells))
        line[index[p["cell"]]] = p["status"]
    table.rows = sorted(lines.items())
    return table


def comparability(env: dict[str, Any]) -> str:
    """Why a cell's throughput is not comparable to real hardware ('' when it is)."""
    if env.get("forced_cpu"):
        return "GPU passed over for the CPU: " + str(env["forced_cpu"])
    if "paravirtual" in str(env.get("device_name", "")).lower():
        return "paravirtual GPU: not comparable to real hardware"
    return ""


def bench_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Throughput rows in cell order, with CV, backend and a comparability note."""
    order = {c["cell"]: i for i, c in enumerate(report["cells"])}
    labels = {c["cell"]: column_label(c) for c in report["cells"]}
    envs = {c["cell"]: c["env"] for c in report["cells"]}
    rows = []
    for b in sorted(report["bench"], key=lambda b: (order.get(b["cell"], 0), b.get("model", ""),
                                                     b.get("subject", ""), b.get("batch", 0))):
        gen = b.get("gen_tok_s") or {}
        mean, sd = gen.get("mean"), gen.get("stddev")
        cv = sd / mean if isinstance(mean, int | float) and mean and sd is not None else None
        env = envs.get(b["cell"], {})
        rows.append({**b, "release": labels.get(b["cell"], b["cell"]), "mean": mean, "sd": sd,
                     "cv": cv, "backend": b.get("backend") or env.get("backend", "cpu"),
                     "device": env.get("device_name", ""), "note": comparability(env)})
    return rows


def by_backend(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Throughput grouped by backend: CPU and GPU figures are never put in one comparison."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["backend"], []).append(row)
    return groups


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
