"""Changes since an earlier report (by default the compat.json this report replaces): every
row whose verdict, fault or severity moved, and rows that are new or vanished, keyed by
cell, backend, runner label and row identity. Unlike the baseline, it gates nothing: it says
what a maintainer would want to know changed since they last looked."""

from __future__ import annotations

import time
from pathlib import Path

from mlxcompat.records.base import RecordError
from mlxcompat.records.report import CompatDoc, Since, read_compat
from mlxcompat.report.baseline import _change, row_key, run_ids


def previous_report(path: Path) -> tuple[CompatDoc | None, str]:
    """The earlier report and a line naming it ('' when there is none or it is unreadable)."""
    if not path.exists():
        return None, ""
    try:
        doc = read_compat(path)
    except RecordError as exc:
        return None, f"{path.name} could not be read ({exc}); no changes shown"
    stamps = [c.finished for c in doc.cells if c.finished]
    when = time.strftime("%Y-%m-%d", time.gmtime(max(stamps))) if stamps else "an earlier run"
    runs = ", ".join(sorted(run_ids(doc))[:3]) or "unknown"
    return doc, f"{path.name} of {when} (run {runs})"


def since(current: CompatDoc, previous: CompatDoc, name: str) -> Since:
    found = Since(previous=name, same_run=run_ids(previous) == run_ids(current))
    old = {row_key(r): r for r in previous.results}
    now = {row_key(r): r for r in current.results}
    for key, row in now.items():
        before = old.get(key)
        if before is None:
            found.new.append(_change(row, "new"))
            continue
        moved = [f"{what} {a} -> {b}" for what, a, b in (
            ("verdict", before.verdict, row.verdict), ("fault", before.fault, row.fault),
            ("severity", before.severity, row.severity)) if a != b]
        if moved:
            found.changed.append(_change(row, "; ".join(moved)))
    found.vanished = [_change(row, "vanished") for key, row in old.items() if key not in now]
    return found
