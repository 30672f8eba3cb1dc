"""Atomic JSON writes: no reader ever sees half a file."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temp file in the same folder, then rename."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=False, default=str)
            fh.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make reports unreadable to others
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def rows_journal(path: Path) -> Path:
    """The append-only file of a subject's result rows beside its document `path`."""
    path = Path(path)
    return path.with_name(path.name + ".rows")


def append_row(journal: Any, row: Any) -> None:
    """One row as one JSON line, flushed to the OS before the next check starts (a process
    that dies later keeps it)."""
    journal.write(json.dumps(row, default=str) + "\n")
    journal.flush()


def read_json(path: Path | None) -> dict[str, Any] | None:
    """A JSON object from `path`; None when it is absent or unreadable (half a file is
    never there: `write_json_atomic`)."""
    if path is None or not Path(path).exists():
        return None
    try:
        return dict(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, json.JSONDecodeError, TypeError, ValueError):
        return None


def last_check_seconds(out: Path) -> dict[str, float]:
    """How long each subject's checks took in the cell document `out` (its last run), so
    that the longest start first: in matrix order a long subject started last ran alone on a
    machine of two cores (0.31.3: rapid-mlx, 6 s). Only the order of starts depends on it;
    an unreadable document gives nothing (the matrix order)."""
    seconds = {}
    for name, counts in ((read_json(out) or {}).get("subjects") or {}).items():
        try:
            seconds[name] = float((counts.get("seconds") or {}).get("checks", 0.0))
        except (AttributeError, TypeError, ValueError):
            continue
    return seconds


def read_document(path: Path) -> dict[str, Any] | None:
    """A subject's document with every row of its journal: the document on disk holds the
    rows up to its last save, the journal every row recorded (a line cut by a crash is left
    out). Saving the whole document after each row made a process's writes quadratic in its
    rows (~1 s for 250 rows)."""
    doc = read_json(path)
    if doc is None:
        return None
    journal = rows_journal(path)
    if not journal.exists():
        return doc
    rows = []
    for line in journal.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    saved = list(doc.get("results") or [])
    if len(rows) > len(saved):
        doc["results"] = saved + rows[len(saved):]
    return doc
