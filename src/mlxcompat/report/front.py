"""The front page as data: "is release X safe for my subject, and why not?"

Per runner label, a subject × release grid with one symbol per cell, a run-length summary per
subject, the first bad and fixed-in release of every check that is not clean, and what each
subject changes compared with `none`. Markdown and HTML render the same data.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from mlxcompat.records.names import BAD, UPSTREAM
from mlxcompat.records.report import CompatDoc, ReportCell, ReportRow
from mlxcompat.records.rows import About

SAFE, EXPECTED, BROKEN, UNSAFE, OUTSIDE, ABSENT = (
    "safe", "expected", "broken", "unexpected", "outside", "absent")
SYMBOL = {SAFE: "✅", EXPECTED: "⚠", BROKEN: "🚫", UNSAFE: "❌", OUTSIDE: "∅", ABSENT: "·"}
MEANING = {SAFE: "every check passes", EXPECTED: "only documented (expected) failures",
           BROKEN: "the subject cannot run here (documented)",
           UNSAFE: "an unexpected outcome", OUTSIDE: "outside the subject's declared range",
           ABSENT: "not run here"}


@dataclass
class Column:
    cell: str
    label: str
    release: str
    axis: str
    version: str


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

    @property
    def what(self) -> str:
        """`parity mamba fresh`, or grouped: `parity mamba (fresh, leave, staggered)`."""
        first = self.about[0]
        if len(self.about) == 1:
            return first.text
        head = " ".join(p for p in (first.check, first.model) if p)
        return f"{head} ({', '.join(a.variant for a in self.about)})"


@dataclass
class SubjectPage:
    subject: str
    requires: dict[str, str]
    symbols: dict[str, str]
    runs: list[tuple[str, str]]
    problems: list[Problem]
    fixes: dict[str, list[str]]
    breaks: dict[str, list[str]]


@dataclass
class Installed:
    """What `pip install <subject>` gives today (its as-installed cell), first on the page."""

    subject: str
    cell: str
    pins: dict[str, str]
    symbol: str
    problems: list[Problem]
    ours: str  # the symbol of this project's own subject on the same cell


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


def in_range(requires: dict[str, str], cell: ReportCell) -> bool:
    """Does the cell's mlx-lm / mlx-vlm satisfy the subject's declared requirements?

    A requirement on a package the cell does not install (mlx-vlm in an mlx-lm cell) does
    not count against it.
    """
    packages = {**cell.env.packages, **cell.pins}
    for name, spec in requires.items():
        if name not in packages:
            continue
        try:
            if Version(str(packages[name])) not in SpecifierSet(spec):
                return False
        except (InvalidSpecifier, InvalidVersion):
            continue
    return True


def _runs(columns: list[Column], symbols: dict[str, str]) -> list[tuple[str, str]]:
    """Run-length summary per axis: [(symbol, '0.28.1–0.30.6'), ...]; open end as '0.31.2+'."""
    out: list[tuple[str, str]] = []
    for axis in ("resolved", "mlx-lm", "mlx-vlm"):
        cols = [c for c in columns if c.axis == axis]
        prefix = "vlm " if axis == "mlx-vlm" else ""
        start = 0
        for i in range(1, len(cols) + 1):
            if i == len(cols) or symbols[cols[i].cell] != symbols[cols[start].cell]:
                first, last = cols[start], cols[i - 1]
                if axis == "resolved":
                    span = ", ".join(c.release for c in cols[start:i])
                elif i == len(cols) and start > 0:
                    span = f"{prefix}{first.version}+"
                elif first is last:
                    span = f"{prefix}{first.version}"
                else:
                    span = f"{prefix}{first.version}–{last.version}"
                out.append((symbols[first.cell], span))
                start = i
    return out


def _problems(rows: list[ReportRow], columns: list[Column], notes: dict[int, int],
              symbols: dict[str, str]) -> list[Problem]:
    """Checks that are not clean on a release inside the subject's declared range (outside
    it, the details tables still have every row)."""
    by_about: dict[About, dict[str, ReportRow]] = defaultdict(dict)
    for r in rows:
        if symbols.get(r.cell) != OUTSIDE:
            by_about[r.about][r.cell] = r
    order = [c.cell for c in columns]
    found = []
    for about, cells in by_about.items():
        bad = [c for c in order if c in cells and cells[c].verdict in BAD]
        if not bad:
            continue
        problem = Problem((about,))
        problem.releases = bad
        axis_cols = [c for c in columns if c.cell in cells and c.axis != "resolved"]
        names = [c.cell for c in axis_cols]
        firsts = [c for c in axis_cols if c.cell in bad]
        if firsts:
            problem.first_bad = firsts[0].release
            after = names[names.index(firsts[-1].cell) + 1:]
            fixed = [cells[c].verdict == "pass" for c in after]
            if fixed and all(fixed):
                problem.fixed_in = next(c for c in axis_cols if c.cell == after[0]).release
        for c in bad:
            r = cells[c]
            problem.unexpected |= not r.outcome.expected
            if r.outcome.expectation is not None:
                problem.notes.add(notes.setdefault(r.outcome.expectation, len(notes) + 1))
        found.append(problem)
    found = _grouped(found)
    found.sort(key=lambda p: (not p.unexpected, -len(p.releases), p.what))
    return found


def _grouped(problems: list[Problem]) -> list[Problem]:
    """Variants of one check and model with the same releases, history and notes become one
    line: `parity mamba (fresh, leave, staggered)`."""
    groups: dict[tuple[Any, ...], list[Problem]] = defaultdict(list)
    for p in problems:
        head = p.about[0]
        key = (head.check, head.model, tuple(p.releases), p.first_bad, p.fixed_in,
               p.unexpected, tuple(sorted(p.notes)))
        groups[key].append(p)
    out = []
    for members in groups.values():
        first = members[0]
        about = tuple(a for m in members for a in m.about)
        out.append(Problem(about, first.releases, first.first_bad, first.fixed_in,
                           set(first.notes), first.unexpected))
    return out


def _changes(rows: list[ReportRow], none_rows: Mapping[tuple[str, About], str]
             ) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    fixes: dict[str, list[str]] = defaultdict(list)
    breaks: dict[str, list[str]] = defaultdict(list)
    for r in rows:
        base = none_rows.get((r.cell, r.about))
        if base is None:
            continue
        if base in BAD and r.verdict == "pass":
            fixes[r.cell].append(r.about.text)
        elif base == "pass" and r.verdict in BAD:
            breaks[r.cell].append(r.about.text)
    return dict(fixes), dict(breaks)


def front_pages(report: CompatDoc, requires: dict[str, dict[str, str]]
                ) -> tuple[list[FrontPage], dict[int, int]]:
    """One page per runner label, and the footnote number of every expectation cited."""
    notes: dict[int, int] = {}
    pages = []
    for label in sorted({c.label for c in report.cells}):
        cells = [c for c in report.cells if c.label == label]
        columns = [Column(c.cell, label, *release_of(c)) for c in cells]
        columns.sort(key=lambda c: (("resolved", "mlx-lm", "mlx-vlm").index(c.axis),
                                    _version(c.version), c.cell))
        rows = [r for r in report.results if r.label == label]
        none_rows = {(r.cell, r.about): r.verdict for r in rows if r.subject == UPSTREAM}
        subjects = list(dict.fromkeys(r.subject for r in rows if r.subject))
        page = FrontPage(label, columns, [])
        by_cell = {c.cell: c for c in cells}
        for subject in subjects:
            mine = [r for r in rows if r.subject == subject]
            symbols = {}
            for col in columns:
                here = [r for r in mine if r.cell == col.cell]
                here += [r for r in rows if r.cell == col.cell and r.check == "install"
                         and not r.subject]
                symbols[col.cell] = _symbol(here, requires.get(subject, {}), by_cell[col.cell])
            fixes, breaks = _changes(mine, none_rows) if subject != UPSTREAM else ({}, {})
            page.subjects.append(SubjectPage(subject, requires.get(subject, {}), symbols,
                                             _runs(columns, symbols),
                                             _problems(mine, columns, notes, symbols),
                                             fixes, breaks))
        page.installed = _installed(page, cells)
        pages.append(page)
    return pages, notes


def _installed(page: FrontPage, cells: list[ReportCell]) -> list[Installed]:
    by_name = {s.subject: s for s in page.subjects}
    found = []
    for cell in cells:
        subject = cell.base.removeprefix("as-installed-")
        if subject == cell.base or subject not in by_name:
            continue
        mine, ours = by_name[subject], by_name.get("mlxcompat")
        found.append(Installed(
            subject, cell.cell, dict(cell.pins), mine.symbols[cell.cell],
            [p for p in mine.problems if cell.cell in p.releases],
            ours.symbols.get(cell.cell, ABSENT) if ours else ABSENT))
    return found


def _symbol(rows: list[ReportRow], requires: dict[str, str], cell: ReportCell) -> str:
    if not rows:
        return ABSENT
    if any(not r.outcome.expected for r in rows):
        return UNSAFE
    if not in_range(requires, cell):
        return OUTSIDE
    checks = [r for r in rows if r.check != "install"]
    if checks and all(r.verdict == "error" for r in checks):
        return BROKEN
    if any(r.verdict in BAD for r in rows):
        return EXPECTED
    return SAFE


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")
