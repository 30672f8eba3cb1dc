"""Read cell JSONs defensively: a broken file becomes one problem line, never a traceback."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat.results import SCHEMA


@dataclass
class LoadedCells:
    cells: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _check(doc: Any, name: str) -> str | None:
    if not isinstance(doc, dict):
        return f"{name}: not a JSON object"
    if doc.get("schema") != SCHEMA:
        return f"{name}: schema {doc.get('schema')!r}, this mlxcompat reads schema {SCHEMA}"
    for key, kind in (("cell", str), ("results", list), ("patches", list), ("bench", list)):
        if not isinstance(doc.get(key), kind):
            return f"{name}: missing or malformed {key!r}"
    return None


def load_cells(raw: Path) -> LoadedCells:
    """Every `<cell>.json` under `raw` (not `*.bench.json`), with a problem line per bad file."""
    loaded = LoadedCells()
    if not raw.is_dir():
        loaded.problems.append(f"{raw}: no such folder; run `nox -s matrix` first")
        return loaded
    files = sorted(p for p in raw.glob("*.json") if not p.name.endswith(".bench.json"))
    if not files:
        loaded.problems.append(f"{raw}: no cell JSON files; run `nox -s matrix` first")
    for path in files:
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            loaded.problems.append(f"{path.name}: unreadable ({type(exc).__name__}: {exc})")
            continue
        problem = _check(doc, path.name)
        if problem:
            loaded.problems.append(problem)
        else:
            loaded.cells.append(doc)
    return loaded
