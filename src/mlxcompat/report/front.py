"""The front page as data: "is release X safe for my subject, whose fault is it, what should I
pin?" Markdown and HTML render the same data.

Per runner label: a subject × release grid of marks (report/standing.py), and per subject its
pin recommendation and bump line (report/pins.py), its top problems with fault, severity,
largest |Δ| and an exact or ranged boundary (report/problems.py), and what it changes
compared with `none`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field

from mlxcompat.records.names import BAD, UPSTREAM
from mlxcompat.records.report import CompatDoc, ReportCell, ReportRow
from mlxcompat.records.rows import About
from mlxcompat.report.boundaries import Releases
from mlxcompat.report.columns import Column, columns_of
from mlxcompat.report.pins import Bump, Pin, bump, recommend
from mlxcompat.report.problems import Problem, problems
from mlxcompat.report.standing import Mark, mark


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
    older: set[str] = field(default_factory=set)  # a family's members before its newest

    @property
    def shown(self) -> list[SubjectPage]:
        """The subjects on the front page: a family by its newest release (the others are
        one run-length line each, their grid and pins folded)."""
        return [s for s in self.subjects if s.subject not in self.older]

    @property
    def folded(self) -> list[SubjectPage]:
        return [s for s in self.subjects if s.subject in self.older]


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
        page = FrontPage(label, columns_of(list(cells.values()), label), [],
                         older={m for members in report.families.values()
                                for m in members[:-1]})
        rows = [r for r in report.results if r.label == label]
        none_rows = {(r.cell, r.about): r.verdict for r in rows if r.subject == UPSTREAM}
        installed_lm = {c.base.removeprefix("as-installed-"): c.pins.get("mlx-lm")
                        for c in cells.values() if c.base.startswith("as-installed-")}
        for subject in dict.fromkeys(r.subject for r in rows if r.subject):
            page.subjects.append(_subject_page(
                subject, rows, page.columns, cells, requires.get(subject, {}), none_rows,
                notes, releases or {}, installed_lm.get(subject)))
        page.installed = _installed(page, list(cells.values()))
        pages.append(page)
    return pages, notes


def _subject_page(subject: str, rows: list[ReportRow], columns: list[Column],
                  cells: dict[str, ReportCell], needs: dict[str, str],
                  none_rows: Mapping[tuple[str, About], str], notes: dict[int, int],
                  releases: Releases, installed_lm: str | None) -> SubjectPage:
    mine = [r for r in rows if r.subject == subject]
    by_cell: dict[str, list[ReportRow]] = {}
    for r in rows:
        if r.subject == subject or (r.check == "install" and not r.subject):
            by_cell.setdefault(r.cell, []).append(r)
    marks = {col.cell: mark(by_cell.get(col.cell, []), needs, cells[col.cell])
             for col in columns}
    fixes, breaks = _changes(mine, none_rows) if subject != UPSTREAM else ({}, {})
    return SubjectPage(
        subject, needs, marks, _runs(columns, marks),
        problems(mine, columns, notes, releases), fixes, breaks,
        recommend(columns, marks, _caveats(mine, columns, needs, cells)),
        _bump(mine, columns, marks, installed_lm),
        Counter((r.fault, r.severity) for r in mine if r.fault))


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


