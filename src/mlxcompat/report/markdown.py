"""compat.md: the front page (is release X safe for my subject, and why not), then the detail
tables folded into <details> blocks.

Everything taken from cell JSONs is untrusted text: `cell_text` escapes what would break a
table or inject HTML. The front page alone is what CI writes to the step summary.
"""

from __future__ import annotations

from mlxcompat.records.names import UPSTREAM
from mlxcompat.records.report import Changes, CompatDoc
from mlxcompat.report.front import MEANING, SAFE, SYMBOL, Column, FrontPage, front_pages
from mlxcompat.report.sections import detail_sections
from mlxcompat.report.tables import cell_text, table

LIMIT_BYTES = 1_000_000
MAX_PROBLEMS = 8


def headline(report: CompatDoc, changes: Changes) -> list[str]:
    counts = report.counts
    parts = [f"**{len(report.cells)} cells**", f"pass {counts.get('pass', 0)}",
             f"expected failures {report.expected_failures} (documented upstream)",
             f"**unexpected {report.unexpected}**", f"regressions {len(changes.regressions)}",
             f"skip {counts.get('skip', 0)}"]
    lines = [" · ".join(parts), ""]
    lines += [f"> ⛔ input problem: {cell_text(p)}" for p in report.problems]
    lines += [f"> ⛔ missing: {cell_text(m)}" for m in report.missing]
    lines += [f"> ignored (not a matrix cell): {cell_text(s)}" for s in report.strays]
    if changes.no_baseline:
        lines.append(f"> {len(changes.no_baseline)} cell(s) had no comparable baseline "
                     f"(another runner, backend or machine).")
    return [*lines, ""]


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


def _installed_lines(page: FrontPage) -> list[str]:
    """The first lines: what each subject's users get from `pip install` today."""
    out = []
    for i in page.installed:
        pins = " · ".join(f"{k} {v}" for k, v in i.pins.items())
        why = "; ".join(f"{p.what}" + "".join(f"[^{n}]" for n in sorted(p.notes))
                        for p in i.problems[:4])
        more = f" (+{len(i.problems) - 4} more)" if len(i.problems) > 4 else ""
        out.append(f"- **{cell_text(i.subject)} as `pip install` gives it today** (resolved "
                   f"for Apple silicon: {cell_text(pins)}): {SYMBOL[i.symbol]}"
                   + (f" — {cell_text(why)}{more}" if why else "")
                   + f". With this project's patches on the same cell: {SYMBOL[i.ours]}.")
    return [*out, ""] if out else []


def _grid(page: FrontPage) -> list[str]:
    names = [s.subject for s in page.subjects]
    rows = [[c.release, *(SYMBOL[s.symbols[c.cell]] for s in page.subjects)]
            for c in page.columns]
    return table(["release", *names], rows)


def _subject_lines(page: FrontPage, notes: dict[int, int]) -> list[str]:
    out = []
    for s in page.subjects:
        out += [f"#### {s.subject}", ""]
        if s.requires:
            declared = " · ".join(f"{k}{v}" for k, v in s.requires.items())
            out += [f"Declares {cell_text(declared)}; cells outside that range are marked ∅.",
                    ""]
        out += [" · ".join(f"{SYMBOL[sym]} {span_}" for sym, span_ in s.runs), ""]
        safe = [c.cell for c in page.columns if s.symbols[c.cell] == SAFE]
        out += [f"**Safe** (every check passes): {cell_text(span(page.columns, safe))}." if safe
                else "**Safe**: no release here passes every check.", ""]
        for p in s.problems[:MAX_PROBLEMS]:
            mark = "❌" if p.unexpected else "⚠"
            when = span(page.columns, p.releases)
            hist = ", ".join(x for x in (f"first bad {p.first_bad}" if p.first_bad else "",
                                         f"fixed in {p.fixed_in}" if p.fixed_in else "") if x)
            refs = "".join(f"[^{n}]" for n in sorted(p.notes))
            out.append(f"- {mark} **{cell_text(p.what)}** on {cell_text(when)}"
                       + (f" ({hist})" if hist else "") + (f" {refs}" if refs else ""))
        if len(s.problems) > MAX_PROBLEMS:
            out.append(f"- … {len(s.problems) - MAX_PROBLEMS} more in the details below")
        if s.subject != UPSTREAM:
            out += ["", _compared(page, s.fixes, "fixes"), _compared(page, s.breaks, "breaks")]
        out.append("")
    return out


def _compared(page: FrontPage, changes: dict[str, list[str]], verb: str) -> str:
    """`Compared with none, fixes: 12 checks on lm 0.28.4–0.30.2 (parity mamba2 …)`."""
    if not changes:
        return f"Compared with `none`, {verb}: nothing."
    groups: dict[tuple[str, ...], list[str]] = {}
    for cell, whats in changes.items():
        groups.setdefault(tuple(sorted(whats)), []).append(cell)
    parts = []
    for listed, cells in sorted(groups.items(), key=lambda kv: -len(kv[0])):
        shown = ", ".join(listed[:4]) + (f" +{len(listed) - 4}" if len(listed) > 4 else "")
        parts.append(f"{len(listed)} on {span(page.columns, cells)} ({shown})")
    return f"Compared with `none`, {verb}: " + "; ".join(cell_text(p) for p in parts) + "."


def _footnotes(report: CompatDoc, notes: dict[int, int]) -> list[str]:
    by_index = {e.index: e for e in report.expectations}
    out = []
    for index, n in sorted(notes.items(), key=lambda kv: kv[1]):
        e = by_index.get(index)
        if e is None:
            continue
        link = f" {e.link}" if e.link else ""
        out.append(f"[^{n}]: {cell_text(e.reason)}{link}")
    return [*out, ""] if out else []


def render_front_page(report: CompatDoc, changes: Changes, link: str = "") -> str:
    pages, notes = front_pages(report, report.requires)
    lines = ["# mlxcompat compatibility report", "", *headline(report, changes)]
    legend = " · ".join(f"{SYMBOL[k]} {v}" for k, v in MEANING.items())
    for page in pages:
        where = f" on {page.label}" if page.label else ""
        lines += [f"## Is it safe to batch with this release{where}?", "",
                  *_installed_lines(page), legend, "", *_grid(page),
                  f"### Per subject{where}", "", *_subject_lines(page, notes)]
    lines += _footnotes(report, notes)
    if link:
        lines += [f"Full report (every table, throughput, API drift): {link}", ""]
    return "\n".join(lines) + "\n"


def render_markdown(report: CompatDoc, changes: Changes, extra: list[str] | None = None) -> str:
    """The whole compat.md; `extra` holds further sections (e.g. the API-drift table)."""
    text = render_front_page(report, changes) + "\n".join(
        ["## Details", "", *detail_sections(report, changes, extra or [])]) + "\n"
    if len(text.encode()) > LIMIT_BYTES:
        cut = text.encode()[: LIMIT_BYTES - 200].decode(errors="ignore")
        text = cut + "\n\n… truncated at 1 MB; see compat.json.\n"
    return text
