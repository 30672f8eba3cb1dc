"""A subject whose entry points changed nothing runs `none`'s code: its behaviour rows are `none`'s.

Many releases of a family ship an entry point that patches nothing on a given mlx-lm (it only
logs, or finds the fix upstream). Their behaviour checks measure `none` again: on the big
cells that was a third of the matrix's check time, most of it in the server check. So a
subject process that observes its entry points changed nothing (its patch rows, and
`footprint` across mlx, mlx-lm and mlx-vlm) skips its behaviour cases and names them
(`SubjectCounts.borrowed`); the merge copies `none`'s row of each case, marked
`borrowed_from`, and a case `none` has no row for becomes an `error` naming why. The
subject's own rows (install, import, patch-status, idempotence, process-state) are always
its own, so a patch that does nothing where it is needed still fails its patch-status row.
Throughput is not borrowed: it would be `none`'s, measured once. `--no-share` turns it off.
"""

from __future__ import annotations

from mlxcompat.records.cell import Borrowed, CellDoc
from mlxcompat.records.names import CASE_FIELDS, case_key
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import ResultRow


def why_not(rows: list[PatchRow], wide: list[str]) -> list[str]:
    """What rules borrowing out: anything an entry point changed, said or left behind."""
    found = []
    for row in rows:
        if row.observed not in ("skipped", "not-applicable"):
            found.append(f"{row.role}: {row.observed}")
        if row.changed:
            found.append(f"{row.role} changed {', '.join(row.changed[:3])}")
        if row.process is not None and row.process.changes():
            found.append(f"{row.role}: {row.process.changes()[0]}")
        rec = row.idempotence
        if rec is not None and (rec.second_call_changed or rec.wrote_files or rec.not_restored
                                or rec.reapply_differs or rec.second_call_raised):
            found.append(f"{row.role}: its second call, unpatch or re-apply changed something")
    return found + wide


def case_keys(case: object) -> dict[str, str]:
    """A case's check and keys, the empty ones left out (a Case or a ResultRow)."""
    return {k: str(getattr(case, k)) for k in CASE_FIELDS if getattr(case, k)}


def _key(keys: dict[str, str]) -> tuple[str, ...]:
    """`case_key` of the case these stored keys name."""
    return tuple(keys.get(k, "") for k in CASE_FIELDS)


def borrow_rows(doc: CellDoc) -> None:
    """Give each borrowing subject its source's row of every case it did not run."""
    for name, counts in list(doc.subjects.items()):
        borrowed: Borrowed | None = counts.borrowed
        if borrowed is None:
            continue
        index = {case_key(r): r for r in doc.results if r.subject == borrowed.source}
        for keys in borrowed.cases:
            row = index.get(_key(keys))
            if row is None:
                doc.results.append(ResultRow.error(
                    subject=name, detail=f"not run here: its entry points changed nothing, so "
                    f"its behaviour rows are {borrowed.source}'s, and {borrowed.source} has no "
                    "row for this case", **keys))
            else:
                doc.results.append(row.model_copy(update={"subject": name,
                                                          "borrowed_from": borrowed.source}))
