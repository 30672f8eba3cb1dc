"""A subject's problems on the front page: every check that does not pass on some release,
one line per fault and severity, with its largest |Δ|, its boundaries (report/boundaries.py)
and the expectation notes it cites."""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mlxcompat.records.names import BAD
from mlxcompat.records.report import ReportRow
from mlxcompat.records.rows import About
from mlxcompat.report.boundaries import Releases, edge
from mlxcompat.report.columns import Column

_PATH = re.compile(r"\s*\((?:/|[A-Za-z]:\\)[^)]*\)?")
FAULT_ORDER = ("subject-worsened", "subject", "upstream")
SEVERITY_ORDER = ("wrong-tokens", "crash", "cannot-run", "contract", "drift")


@dataclass
class Problem:
    """What is not clean for a subject on some releases: one `About`, or several of one
    check and model with the same story (grouped)."""

    about: tuple[About, ...]
    releases: list[str] = field(default_factory=list)
    first_bad: str = ""
    fixed_in: str = ""
    notes: set[int] = field(default_factory=set)
    unexpected: bool = False
    fault: str = ""
    severity: str = ""
    delta: float | None = None
    label: str = ""  # instead of the checks, for a subject that cannot run at all

    @property
    def what(self) -> str:
        """`parity mamba fresh`, or grouped: `parity mamba (fresh, leave, staggered)`."""
        if self.label:
            return self.label
        first = self.about[0]
        if len(self.about) == 1:
            return first.text
        head = " ".join(p for p in (first.check, first.model) if p)
        return f"{head} ({', '.join(a.variant for a in self.about)})"

    @property
    def anchor(self) -> str:
        return f"matrix-{self.about[0].check}" if self.about else "matrix-import"


def _boundaries(problem: Problem, cells: dict[str, ReportRow], columns: list[Column],
                releases: Releases) -> None:
    axis_cols = [c for c in columns if c.cell in cells and c.axis != "resolved"]
    bad = [c for c in axis_cols if c.cell in problem.releases]
    if not bad:
        return
    first, last = bad[0], bad[-1]
    i, j = axis_cols.index(first), axis_cols.index(last)
    if i > 0 and cells[axis_cols[i - 1].cell].verdict not in BAD:
        problem.first_bad = edge(releases, first.axis, axis_cols[i - 1].version, first.version,
                                 "first bad")[0]
    after = axis_cols[j + 1:]
    if after and all(cells[c.cell].verdict == "pass" for c in after):
        problem.fixed_in = edge(releases, last.axis, last.version, after[0].version,
                                "fixed in")[0]


def problems(rows: list[ReportRow], columns: list[Column], notes: dict[int, int],
              releases: Releases) -> list[Problem]:
    """Every check that does not pass on some release, one problem per fault and severity
    (a subject that cannot run at all is one problem per set of releases, not one per check)."""
    by_about: dict[About, dict[str, ReportRow]] = defaultdict(dict)
    for r in rows:
        by_about[r.about][r.cell] = r
    order = [c.cell for c in columns]
    found, cannot_run = [], defaultdict(list)
    for about, cells in by_about.items():
        stories: dict[tuple[str, str], list[ReportRow]] = defaultdict(list)
        for c in order:
            if c in cells and cells[c].verdict in BAD:
                stories[(cells[c].fault or "", cells[c].severity or "")].append(cells[c])
        for (fault, severity), bad_rows in stories.items():
            if severity == "cannot-run":
                for r in bad_rows:
                    cannot_run[(fault, r.cell)].append(r)
                continue
            deltas = [r.delta for r in bad_rows if r.delta is not None]
            problem = Problem((about,), [r.cell for r in bad_rows],
                              unexpected=any(not r.outcome.expected for r in bad_rows),
                              fault=fault, severity=severity,
                              delta=max(deltas) if deltas else None)
            _boundaries(problem, cells, columns, releases)
            _cite(problem, bad_rows, notes)
            found.append(problem)
    found = _grouped(found) + _not_run(cannot_run, order, notes)
    found.sort(key=lambda p: (not p.unexpected, p.severity != "cannot-run",
                              _rank(p.fault, FAULT_ORDER), _rank(p.severity, SEVERITY_ORDER),
                              -len(p.releases), p.what))
    return found


def _cite(problem: Problem, rows: list[ReportRow], notes: dict[int, int]) -> None:
    for r in rows:
        if r.outcome.expectation is not None:
            problem.notes.add(notes.setdefault(r.outcome.expectation, len(notes) + 1))


def _not_run(found: dict[tuple[str, str], list[ReportRow]], order: list[str],
             notes: dict[int, int]) -> list[Problem]:
    """`every check not run (…why…)`: one problem per fault and set of releases."""
    by_cells: dict[tuple[str, tuple[str, ...], str], list[ReportRow]] = defaultdict(list)
    why = {}
    for (fault, cell), rows in found.items():
        reason = short_reason(rows[0].detail.removeprefix("not run: "))
        why[cell] = reason
        by_cells[(fault, (), reason)].extend(rows)
    out = []
    for (fault, _, reason), rows in by_cells.items():
        cells = [c for c in order if any(r.cell == c for r in rows)]
        problem = Problem((), cells, unexpected=any(not r.outcome.expected for r in rows),
                          fault=fault, severity="cannot-run",
                          label=f"every check not run ({reason})")
        _cite(problem, rows, notes)
        out.append(problem)
    return out


def short_reason(text: str, limit: int = 130) -> str:
    """An error for one line: without the machine's paths (`(/work/.../generate.py)`), cut at
    a word within `limit` characters."""
    text = " ".join(_PATH.sub("", text).split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(" :,(") + " …"


def _rank(value: str, order: tuple[str, ...]) -> int:
    return order.index(value) if value in order else len(order)


def _grouped(problems: list[Problem]) -> list[Problem]:
    """Variants of one check and model with the same releases and story become one line:
    `parity mamba (fresh, leave, staggered)`."""
    groups: dict[tuple[Any, ...], list[Problem]] = defaultdict(list)
    for p in problems:
        head = p.about[0] if p.about else About(p.label)
        key = (head.check, head.model, tuple(p.releases), p.first_bad, p.fixed_in,
               p.unexpected, p.fault, p.severity, tuple(sorted(p.notes)))
        groups[key].append(p)
    out = []
    for members in groups.values():
        first = members[0]
        deltas = [m.delta for m in members if m.delta is not None]
        out.append(Problem(tuple(a for m in members for a in m.about), first.releases,
                           first.first_bad, first.fixed_in, set(first.notes), first.unexpected,
                           first.fault, first.severity, max(deltas) if deltas else None))
    return out


