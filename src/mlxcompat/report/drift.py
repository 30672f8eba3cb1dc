"""The report's API-drift section: each patch target across releases, changes marked.

A value that differs from the previous release's (same axis) is marked, so the release where
an API moved stands out in a row.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from mlxcompat.report.markdown import cell_text


def _grid(scan: dict[str, Any], axis: str) -> tuple[list[str], list[tuple[str, list[Any]]]]:
    """Columns (releases) and rows (attribute, values with a changed flag) for one axis."""
    key = "lm" if axis == "mlx-lm" else "vlm"
    rows = [r for r in scan["rows"] if key in r or "error" in r]
    rows = [r for r in rows if (axis == "mlx-vlm") == ("mlx-vlm" in r["pins"])]
    columns = [f"{axis.removeprefix('mlx-')} {r['pins'][axis]}" for r in rows]
    attributes = list(dict.fromkeys(a for r in rows for a in r.get(key, {})))
    grid = []
    for attr in attributes:
        values, before = [], None
        for r in rows:
            value = r.get(key, {}).get(attr, r.get("error", ""))
            values.append((value, before is not None and value != before))
            before = value
        grid.append((attr, values))
    return columns, grid


def _load(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None


def drift_markdown(path: Path) -> list[str]:
    scan = _load(path)
    if not scan:
        return ["## API drift", "", f"{path.name} is unreadable; run `nox -s drift`.", ""]
    out = ["## API drift", "", "Read statically from each release's wheel (`mlxcompat drift`); "
           "**bold** marks a value that changed from the release before.", ""]
    for axis in ("mlx-lm", "mlx-vlm"):
        columns, grid = _grid(scan, axis)
        if not grid:
            continue
        out += [f"### {axis}", "", "| release | " + " | ".join(a for a, _ in grid) + " |",
                "|" + "---|" * (len(grid) + 1)]
        for i, column in enumerate(columns):
            cells = [f"**{cell_text(v)}**" if changed else cell_text(v)
                     for _, values in grid for v, changed in [values[i]]]
            out.append(f"| {column} | " + " | ".join(cells) + " |")
        out.append("")
    seconds = [r["seconds"] for r in scan["rows"] if "seconds" in r]
    if seconds:
        out += [f"Probe time per release: mean {sum(seconds) / len(seconds):.3f}s, "
                f"max {max(seconds):.3f}s (wheels already local).", ""]
    return out


def drift_html(path: Path) -> list[str]:
    scan = _load(path)
    if not scan:
        return []
    parts = ["<h2>API drift</h2><p class='note'>Read statically from each release's wheel; "
             "<b>bold</b> marks a change from the release before.</p>"]
    for axis in ("mlx-lm", "mlx-vlm"):
        columns, grid = _grid(scan, axis)
        if not grid:
            continue
        head = "".join(f"<th>{html.escape(a)}</th>" for a, _ in grid)
        body = []
        for i, column in enumerate(columns):
            cells = "".join(
                f"<td class='key'>{'<b>' if changed else ''}{html.escape(str(v))}"
                f"{'</b>' if changed else ''}</td>"
                for _, values in grid for v, changed in [values[i]])
            body.append(f"<tr><td>{html.escape(column)}</td>{cells}</tr>")
        parts.append(f"<h3>{axis}</h3><table id='drift-{axis}'><tr><th>release</th>{head}</tr>"
                     + "".join(body) + "</table>")
    return parts
