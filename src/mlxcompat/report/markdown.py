"""compat.md: the front page (what to pin, whose fault, how bad, what changed), then the
detail tables folded into <details> blocks.

Everything taken from cell JSONs is untrusted text: `cell_text` escapes what would break a
table or inject HTML. The front page alone is what CI writes to the step summary; it needs
no emoji font (marks are words, see report/standing.py).
"""

from __future__ import annotations

from collections import Counter

from mlxcompat.records.names import FAULTS, SEVERITIES, UPSTREAM
from mlxcompat.records.report import AxisLine, Changes, CompatDoc
from mlxcompat.report.columns import Column
from mlxcompat.report.context import banner
from mlxcompat.report.front import FrontPage, SubjectPage, front_pages
from mlxcompat.report.problems import Problem
from mlxcompat.report.sections import detail_sections
from mlxcompat.report.standing import CODE, MEANING, SUFFIX
from mlxcompat.report.tables import cell_text, table

LIMIT_BYTES = 1_000_000
TOP_PROBLEMS = 3
FAULT_WORDS = {"upstream": "upstream", "subject": "the subject's own",
               "subject-worsened": "worsened by the subject"}


def fault_counts(report: CompatDoc) -> Counter:
    return Counter((r.fault, r.severity) for r in report.results if r.fault and r.severity)


def headline(report: CompatDoc, changes: Changes) -> list[str]:
    counts = fault_counts(report)
    by_fault = [f"{FAULT_WORDS[f]} {sum(n for (g, _), n in counts.items() if g == f):,}"
                for f in FAULTS if f in FAULT_WORDS]
    fixed = sum(1 for r in report.results if r.fault == "fixed-by-subject")
    regress = ("none possible: the baseline was accepted from this run" if changes.same_run
               else f"{len(changes.regressions)}" if changes.baseline else "no baseline")
    lines = [f"**{len(report.cells)} cells · {len(report.results):,} rows · unexpected "
             f"{report.unexpected}** · regressions: {regress}",
             "", f"Not passing, by fault: {' · '.join(by_fault)}; passing only thanks to a "
             f"subject: {fixed:,} rows.", ""]
    lines += [f"> input problem: {cell_text(p)}" for p in report.problems]
    lines += [f"> missing: {cell_text(m)}" for m in report.missing]
    lines += [f"> ignored (not a matrix cell): {cell_text(s)}" for s in report.strays]
    return [*lines, ""] if lines[-1] else lines


def span(columns: list[Column], cells: list[str]) -> str:
    """Cells as release ranges in column order: `lm 0.30.4–0.31.1, vlm 0.5.0`."""
    picked = [c.cell in cells for c in columns]
    parts, i = [], 0
    while i < len(columns):
        if not picked[i]:
            i += 1
            continue
        j = i
        while j + 1 < len(columns) and picked[j + 1] and columns[j + 1].axis == columns[i].axis:
            j += 1
        first, last = columns[i], columns[j]
        if first.axis == "resolved":  # named cells, never a range
            parts += [c.release for c in columns[i:j + 1]]
        else:
            parts.append(first.release if i == j else f"{first.release}–{last.version}")
        i = j + 1
    return ", ".join(parts)


def problem_line(page: FrontPage, p: Problem) -> str:
    fault = FAULT_WORDS.get(p.fault, p.fault)
    delta = f", |Δ| ≤ {p.delta:.2g}" if p.delta is not None and p.severity == "drift" else ""
    history = "; ".join(x for x in (p.first_bad, p.fixed_in) if x)
    mark = "NEW! " if p.unexpected else ""
    notes = "".join(f" [note {n}](#note-{n})" for n in sorted(p.notes))
    return (f"- {mark}{fault} · {p.severity}{delta}: **{cell_text(p.what)}** on "
            f"{cell_text(span(page.columns, p.releases))}"
            + (f" ({cell_text(history)})" if history else "") + f" [table](#{p.anchor}){notes}")


def _pin_cell(s: SubjectPage) -> str:
    parts = [(f"**{p.constraint}**" + (f" (but {'; '.join(p.caveats)})" if p.caveats else ""))
             if p.constraint else f"{p.axis}: none ({p.why})" for p in s.pins]
    return "; ".join(parts) or "no cells"


def _bump_cell(s: SubjectPage) -> str:
    b = s.bump
    if b is None:
        return ""
    answer = "yes" if b.safe else "no"
    return (f"{b.frm} → {b.to}: **{answer}** ({b.why}; {len(b.better)} better, "
            f"{len(b.worse)} worse)")


def _pins(page: FrontPage, explain: bool = True, folded: bool = False) -> list[str]:
    installed = {i.subject: i for i in page.installed}
    rows = []
    for s in page.folded if folded else page.shown:
        today = installed.get(s.subject)
        now = (f"{today.mark.code} on {' · '.join(f'{k} {v}' for k, v in today.pins.items())}"
               f"; with mlxcompat: {today.ours.code}") if today else ""
        rows.append([s.subject, now, _pin_cell(s), _bump_cell(s)])
    why = ["Recommended: the releases where nothing worse than upstream numeric drift remains "
           "(a failing patch contract, `+c`, is listed, not counted).", ""] if explain else []
    return ["### What to pin", "", *why,
            *table(["subject", "as `pip install` gives it today", "recommended", "bump to the "
                    "newest release?"], rows)]


def _grid(page: FrontPage, explain: bool = True, folded: bool = False) -> list[str]:
    legend = " · ".join(f"`{CODE[k]}` {v}" for k, v in MEANING.items())
    suffixes = " · ".join(f"`{k}` {v}" for k, v in SUFFIX.items())
    subjects = page.folded if folded else page.shown
    columns = [c for c in page.columns
               if not folded or any(s.marks[c.cell].standing != "absent" for s in subjects)]
    rows = [[c.release, *(s.marks[c.cell].code for s in subjects)] for c in columns]
    why = [legend + ".", "", "Suffixes: " + suffixes + ".", ""] if explain else \
        ["Marks as in the grid above.", ""]
    return ["### Every release, every subject", "", *why,
            *table(["release", *(s.subject for s in subjects)], rows)]


def _subject_lines(page: FrontPage) -> list[str]:
    """Each subject's worst rows; its release by release standing is its grid column."""
    out = ["### Top problems per subject", ""]
    for s in page.shown:
        facts = [f"{len(s.problems)} problems" + (f", the first {TOP_PROBLEMS} here, the rest "
                                                  "in the details"
                                                  if len(s.problems) > TOP_PROBLEMS else "")]
        if s.subject != UPSTREAM and (s.fixes or s.breaks):
            facts.append(f"compared with `none` it fixes {sum(map(len, s.fixes.values()))} "
                         f"rows and breaks {sum(map(len, s.breaks.values()))}")
        out += [f"**{s.subject}** ({'; '.join(facts)})",
                *(problem_line(page, p) for p in s.problems[:TOP_PROBLEMS]), ""]
    return out


def _upstream_fixes(page: FrontPage) -> list[str]:
    """Where upstream fixed what `none` shows broken, release by release (the boundaries
    are exact or given as ranges, as in the problem lines)."""
    upstream = next((s for s in page.shown if s.subject == UPSTREAM), None)
    order = {c.cell: i for i, c in enumerate(page.columns)}
    fixed = sorted((p for p in (upstream.problems if upstream else []) if p.fixed_in),
                   key=lambda p: max(order.get(c, 0) for c in p.releases))
    by_release: dict[str, list[str]] = {}
    for p in fixed:
        by_release.setdefault(p.fixed_in, []).append(p.what)
    if not by_release:
        return []
    return ["### Fixed upstream", "", *(f"- {cell_text(k)}: {cell_text('; '.join(v))}"
                                        for k, v in by_release.items()), ""]


def _axis_lines(axes: list[AxisLine], release: dict[str, str]) -> list[str]:
    """One line per family and behaviour, naming every cell where its releases do that (a
    compat.json from before `behaviour` was recorded: its lines one by one)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for a in axes:
        key = (a.family, a.behaviour) if a.behaviour else ("", a.line)
        grouped.setdefault(key, []).append(release.get(a.cell, a.cell))
    lines = []
    for (family, text), cells in grouped.items():
        lines.append(f"- {family} on {', '.join(cells)}: {text}" if family else f"- {text}")
    return [cell_text(line) for line in lines]


def _axes(report: CompatDoc, page: FrontPage) -> list[str]:
    """Each family's releases on the cells that measured several, cells alike on one line;
    what moved between neighbouring releases and the folded grid of the older releases in
    the details."""
    release = {c.cell: c.release for c in page.columns}
    axes = [a for a in report.subject_axes if a.cell in release]
    if not axes:
        return []
    out = ["### Server releases, one by one", "", *_axis_lines(axes, release), ""]
    moved = [f"- {cell_text(a.cell)}: {cell_text(c)}" for a in axes for c in a.changes]
    shared = [f"- {cell_text(a.cell)}: {', '.join(f'{k} ran as {v}' for k, v in a.shared.items())}"
              for a in axes if a.shared]
    if page.folded:
        out += [f"<details><summary>Every release of each family: {len(page.folded)} older "
                "releases, what moved between neighbours</summary>", "", *moved, "",
                *(["Shared runs (byte-identical entry-point modules):", "", *shared, ""]
                  if shared else []),
                *_pins(page, explain=False, folded=True),
                *_grid(page, explain=False, folded=True), "</details>", ""]
    return out


def _since(report: CompatDoc) -> list[str]:
    found = report.since
    if found is None:
        return []
    if found.same_run:
        return [f"Changes since {cell_text(found.previous)}: none possible (the same run).", ""]
    shown = [f"{c.cell} {c.about.text} {c.subject}: {c.change}" for c in found.changed[:5]]
    return [f"Changes since {cell_text(found.previous)}: {len(found.changed)} rows changed "
            f"verdict, fault or severity, {len(found.new)} new, {len(found.vanished)} "
            "vanished (all in the details).", "",
            *(f"- {cell_text(s)}" for s in shown), *([""] if shown else [])]


def render_front_page(report: CompatDoc, changes: Changes, link: str = "",
                      pages: list[FrontPage] | None = None) -> str:
    pages = pages if pages is not None else front_pages(report, report.requires,
                                                        report.releases)[0]
    lines = ["# mlxcompat compatibility report", "", *(f"> {cell_text(b)}" for b in
                                                     banner(report)), "",
             *headline(report, changes), *_since(report)]
    for page in pages:
        if not page.label:
            lines += ["## Is it safe to batch?", "", *_pins(page), *_grid(page),
                      *_subject_lines(page), *_upstream_fixes(page), *_axes(report, page)]
            continue
        lines += [f"<details><summary>Runner {cell_text(page.label)}: what to pin, every "
                  f"release</summary>", "", *_pins(page, explain=False),
                  *_grid(page, explain=False), "</details>", ""]
    if link:
        lines += [f"Full report (every table, throughput, API drift): {link}", ""]
    return "\n".join(lines) + "\n"


def render_markdown(report: CompatDoc, changes: Changes, extra: list[str] | None = None) -> str:
    """The whole compat.md; `extra` holds further sections (e.g. the API-drift table)."""
    pages, notes = front_pages(report, report.requires, report.releases)
    text = render_front_page(report, changes, pages=pages) + "\n".join(
        ["## Details", "", *detail_sections(report, changes, extra or [], notes)]) + "\n"
    if len(text.encode()) > LIMIT_BYTES:
        cut = text.encode()[: LIMIT_BYTES - 200].decode(errors="ignore")
        text = cut + "\n\n… truncated at 1 MB; see compat.json.\n"
    return text


__all__ = ["SEVERITIES", "fault_counts", "render_front_page", "render_markdown", "span"]
