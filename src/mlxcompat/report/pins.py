"""What a subject's maintainer should declare, and whether the newest release is a safe bump.

A release is *safe* for a subject when nothing worse than upstream numeric drift remains in
its behaviour checks (report/standing.py: `ok` or `drift`; a failing patch contract is named
beside, not counted). Per axis (mlx-lm, mlx-vlm) the recommendation is the run of consecutive
safe cells that reaches the newest cell, else the newest such run, as a copyable
constraint. The bump line compares the subject's rows on one release with the newest one,
row by row (the question a dependency bot's merge-confidence score answers, here from
batched-vs-single evidence).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlxcompat.records.names import BAD
from mlxcompat.records.report import ReportRow
from mlxcompat.records.rows import About
from mlxcompat.report.standing import Mark

AXES = ("mlx-lm", "mlx-vlm")
RANK = {None: 0, "drift": 1, "contract": 2, "wrong-tokens": 3, "crash": 3, "cannot-run": 4}


@dataclass
class Pin:
    axis: str
    constraint: str  # "" when no release of the axis is safe
    cells: list[str] = field(default_factory=list)
    why: str = ""
    caveats: list[str] = field(default_factory=list)  # the same release with another mlx


@dataclass
class Bump:
    frm: str  # release label, e.g. "lm 0.31.3"
    to: str
    safe: bool
    better: list[str] = field(default_factory=list)  # About texts
    worse: list[str] = field(default_factory=list)
    why: str = ""


def _runs(columns: list, marks: dict[str, Mark]) -> list[list]:
    runs: list[list] = []
    current: list = []
    for col in columns:
        if marks[col.cell].safe:
            current.append(col)
        elif current:
            runs.append(current)
            current = []
    return [*runs, current] if current else runs


def recommend(columns: list, marks: dict[str, Mark],
              caveats: dict[str, list[str]] | None = None) -> list[Pin]:
    """One Pin per axis the subject has cells on (absent cells are not counted); `caveats`:
    per pinned cell, what the same release does with another mlx (a resolved cell)."""
    caveats = caveats or {}
    pins = []
    for axis in AXES:
        cols = [c for c in columns if c.axis == axis and marks[c.cell].standing != "absent"]
        if not cols:
            continue
        newest = cols[-1]
        runs = _runs(cols, marks)
        if not runs:
            pins.append(Pin(axis, "", [], f"no {axis} release here is safe; the newest "
                            f"({newest.release}) is `{marks[newest.cell].code}`"))
            continue
        best = next((r for r in runs if r[-1] is newest), runs[-1])
        first, last = best[0].version, best[-1].version
        constraint = f"{axis}=={first}" if first == last else f"{axis}>={first},<={last}"
        if best[-1] is newest:
            why = "nothing worse than upstream drift from here to the newest release measured"
        else:
            after = cols[cols.index(best[-1]) + 1]
            why = f"{after.release} is `{marks[after.cell].code}`"
        caveat = [c for col in best for c in caveats.get(col.cell, [])]
        pins.append(Pin(axis, constraint, [c.cell for c in best], why, caveat))
    return pins


def _rank(row: ReportRow | None) -> int:
    if row is None or row.verdict not in BAD:
        return 0
    return RANK.get(row.severity, 3)


def bump(rows: list[ReportRow], frm, to, marks: dict[str, Mark]) -> Bump:
    """Row by row, `frm`'s cell against `to`'s (columns): what gets better, what worse."""
    old: dict[About, ReportRow] = {r.about: r for r in rows if r.cell == frm.cell}
    new: dict[About, ReportRow] = {r.about: r for r in rows if r.cell == to.cell}
    better = sorted(a.text for a in old.keys() & new.keys() if _rank(new[a]) < _rank(old[a]))
    worse = sorted(a.text for a in old.keys() & new.keys() if _rank(new[a]) > _rank(old[a]))
    worse += sorted(f"{a.text} (new)" for a in new.keys() - old.keys() if _rank(new[a]))
    target = marks[to.cell]
    safe = target.safe and not worse
    why = (f"{to.release} is `{target.code}`" if not target.safe else
           f"{len(worse)} row(s) get worse" if worse else
           "nothing gets worse, and nothing worse than upstream drift remains")
    return Bump(frm.release, to.release, safe, better, worse, why)
