"""The front page as data: "is release X safe for my subject, whose fault is it, what should I
pin?" Markdown and HTML render the same data.

Per runner label: a subject × release grid of marks (report/standing.py), and per subject its
pin recommendation and bump line (report/pins.py), its top problems with fault, severity,
largest |Δ| and an exact or ranged boundary (report/boundaries.py), and what it changes
compared with `none`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.version import InvalidVersion, Version

from mlxcompat.records.names import BAD, UPSTREAM
from mlxcompat.records.report import CompatDoc, ReportCell, ReportRow
from mlxcompat.records.rows import About
from mlxcompat.report.boundaries import Releases, edge
from mlxcompat.report.pins import Bump, Pin, bump, recommend
from mlxcompat.report.standing import Mark, mark

FAULT_ORDER = ("subject-worsened", "subject", "upstream")
SEVERITY_ORDER = ("wrong-tokens", "crash", "cannot-run", "contract", "drift")


@dataclass
class Column:
    cell: str
    label: str
    release: str
    axis: str
    version: str
    pins: dict[str, str] = field(default_factory=dict)


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


@dataclass
class SubjectPage:
    subject: str
    requires: dict[str, str]
    marks: dict[str, Mark]
    runs: list[tuple[str, str]]
    problems: list[Problem]
    fixes: dict[str, list[str]]
    breaks: dict[str, list[str]]
    pins: list[Pin] = field(default_factory=list)
    bump: Bump | None = None
    faults: Counter = field(default_factory=Counter)  # (fault, severity) -> rows


@dataclass
class Installed:
    """What `pip install <subject>` gives today (its as-installed cell), first on the page."""

    subject: str
    cell: str
    pins: dict[str, str]
    mark: Mark
    problems: list[Problem]
    ours: Mark  # this project's own subject on the same cell


@dataclass
class FrontPage:
    label: str
    columns: list[Column]
    subjects: list[SubjectPage]
    installed: list[Installed] = field(default_factory=list)


def release_of(cell: ReportCell) -> tuple[str, str, str]:
    """(display, axis, version) of a cell: `lm 0.31.3`, `vlm 0.7.10`, or a resolved cell."""
    pins, base = cell.pins, cell.base
    if not base.startswith(("mlx-lm-", "mlx-vlm-")):
        lm = pins.get("mlx-lm", "?")
        return f"{base} (lm {lm})", "resolved", lm
    if "mlx-vlm" in pins:
        return f"vlm {pins['mlx-vlm']}", "mlx-vlm", pins["mlx-vlm"]
    return f"lm {pins.get('mlx-lm', '?')}", "mlx-lm", pins.get("mlx-lm", "0")


def _runs(columns: list[Column], marks: dict[str, Mark]) -> list[tuple[str, str]]:
    """Run-length summary per axis: [(code, '0.28.1–0.30.6'), ...]; open end as '0.31.2+'."""
    out: list[tuple[str, str]] = []
    for axis in ("resolved", "mlx-lm", "mlx-vlm"):
        cols = [c for c in columns if c.axis == axis]
        prefix = "vlm " if axis == "mlx-vlm" else ""
        start = 0
        for i in range(1, len(cols) + 1):
            if i == len(cols) or marks[cols[i].cell].code != marks[cols[start].cell].code:
                first, last = cols[start], cols[i - 1]
                if axis == "resolved":
                    span = ", ".join(c.release for c in cols[start:i])
                elif i == len(cols) and start > 0:
                    span = f"{prefix}{first.version}+"
                elif first is last:
                    span = f"{prefix}{first.version}"
                else:
                    span = f"{prefix}{first.version}–{last.version}"
                out.append((marks[first.cell].code, span))
                start = i
    return out


def _worst(values: list[str], order: tuple[str, ...]) -> str:
    found = [v for v in values if v in order]
    return min(found, key=order.index) if found else ""


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


def _problems(rows: list[ReportRow], columns: list[Column], notes: dict[int, int],
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
        reason = rows[0].detail.removeprefix("not run: ")[:120]
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


def _changes(rows: list[ReportRow], none_rows: Mapping[tuple[str, About], str]
             ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    fixes: dict[str, list[str]] = defaultdict(list)
    breaks: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        base = none_rows.get((r.cell, r.about))
        if base in BAD and r.verdict == "pass":
            fixes[r.cell].append(r.about.text)
        elif base == "pass" and r.verdict in BAD:
            breaks[r.cell].append(r.about.text)
    return dict(fixes), dict(breaks)


def _bump(page_rows: list[ReportRow], columns: list[Column], marks: dict[str, Mark],
          installed_lm: str | None) -> Bump | None:
    lm = [c for c in columns if c.axis == "mlx-lm" and marks[c.cell].standing != "absent"]
    if len(lm) < 2:
        return None
    to = lm[-1]
    frm = next((c for c in lm if c.version == installed_lm), None) if installed_lm else None
    return bump(page_rows, frm or lm[-2], to, marks)


def front_pages(report: CompatDoc, requires: dict[str, dict[str, str]],
                releases: Releases | None = None) -> tuple[list[FrontPage], dict[int, int]]:
    """One page per runner label, and the footnote number of every expectation cited."""
    notes: dict[int, int] = {}
    pages = []
    for label in sorted({c.label for c in report.cells}):
        cells = {c.cell: c for c in report.cells if c.label == label}
        columns = sorted((Column(c.cell, label, *release_of(c), dict(c.pins))
                          for c in cells.values()),
                         key=lambda c: (("resolved", "mlx-lm", "mlx-vlm").index(c.axis),
                                        _version(c.version), c.cell))
        rows = [r for r in report.results if r.label == label]
        none_rows = {(r.cell, r.about): r.verdict for r in rows if r.subject == UPSTREAM}
        page = FrontPage(label, columns, [])
        installed_lm = {c.base.removeprefix("as-installed-"): c.pins.get("mlx-lm")
                        for c in cells.values() if c.base.startswith("as-installed-")}
        for subject in dict.fromkeys(r.subject for r in rows if r.subject):
            mine = [r for r in rows if r.subject == subject]
            needs = requires.get(subject, {})
            marks = {}
            for col in columns:
                here = [r for r in rows if r.cell == col.cell
                        and (r.subject == subject or (r.check == "install" and not r.subject))]
                marks[col.cell] = mark(here, needs, cells[col.cell])
            fixes, breaks = _changes(mine, none_rows) if subject != UPSTREAM else ({}, {})
            page.subjects.append(SubjectPage(
                subject, needs, marks, _runs(columns, marks),
                _problems(mine, columns, notes, releases or {}), fixes, breaks,
                recommend(columns, marks, _caveats(mine, columns, needs, cells)),
                _bump(mine, columns, marks, installed_lm.get(subject)),
                Counter((r.fault, r.severity) for r in mine if r.fault)))
        page.installed = _installed(page, list(cells.values()))
        pages.append(page)
    return pages, notes


def _caveats(rows: list[ReportRow], columns: list[Column], needs: dict[str, str],
             cells: dict[str, ReportCell]) -> dict[str, list[str]]:
    """Per pinned cell: a resolved cell (latest, as installed) with the same mlx-lm but
    another mlx whose same checks stand worse (the pin of mlx matters too)."""
    found: dict[str, list[str]] = defaultdict(list)
    for res in (c for c in columns if c.axis == "resolved"):
        for pinned in (c for c in columns if c.axis == "mlx-lm"):
            if res.pins.get("mlx-lm") != pinned.version or res.pins.get("mlx") == \
                    pinned.pins.get("mlx"):
                continue
            abouts = {r.about for r in rows if r.cell == pinned.cell}
            there = [r for r in rows if r.cell == res.cell and r.about in abouts]
            here = mark([r for r in rows if r.cell == pinned.cell], needs, cells[pinned.cell])
            other = mark(there, needs, cells[res.cell])
            if there and other.safe != here.safe:
                found[pinned.cell].append(
                    f"{pinned.release} with mlx {res.pins.get('mlx')} (cell {res.cell}) is "
                    f"`{other.code.rstrip('*')}`, with mlx {pinned.pins.get('mlx')} "
                    f"`{here.code.rstrip('*')}`")
    return dict(found)


def _installed(page: FrontPage, cells: list[ReportCell]) -> list[Installed]:
    by_name = {s.subject: s for s in page.subjects}
    found = []
    for cell in cells:
        subject = cell.base.removeprefix("as-installed-")
        if subject == cell.base or subject not in by_name:
            continue
        mine, ours = by_name[subject], by_name.get("mlxcompat")
        found.append(Installed(
            subject, cell.cell, dict(cell.pins), mine.marks[cell.cell],
            [p for p in mine.problems if cell.cell in p.releases],
            ours.marks.get(cell.cell, Mark("absent")) if ours else Mark("absent")))
    return found


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")
