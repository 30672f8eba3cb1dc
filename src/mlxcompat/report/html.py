"""compat.html: the Markdown front page's content (report/markdown.py is the reference) and the
detail tables as one standalone page (jinja2), usable on a laptop and a phone: a sticky filter
bar that reaches the grid, deep links that land below it, sticky label columns capped in width.

Autoescaping is on: error messages, versions and device names come from cell JSONs and are
untrusted. Plots are embedded as data URIs; nothing is fetched from the network. No emoji:
marks are words (report/standing.py) and colour is the second channel.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from mlxcompat.records.names import FAULTS, UPSTREAM
from mlxcompat.records.report import Changes, CompatDoc, ReportCell
from mlxcompat.report.columns import release_of
from mlxcompat.report.context import banner
from mlxcompat.report.front import front_pages
from mlxcompat.report.markdown import FAULT_WORDS, TOP_PROBLEMS, fault_counts, span
from mlxcompat.report.plots import all_plots
from mlxcompat.report.standing import CODE, MEANING, SUFFIX, Mark
from mlxcompat.report.tables import (
    ENV_KEYS,
    MARK,
    STATUS_MARK,
    column_label,
    env_rows,
    patch_table,
    verdict_tables,
)
from mlxcompat.report.throughput import bench_rows, by_backend, compact, full_rows

if TYPE_CHECKING:
    from markupsafe import Markup


def releases_of(cell: ReportCell) -> list[str]:
    """The release-filter values a cell answers to: its own release (`lm 0.31.3`), and for a
    resolved cell (latest, as installed) its name and the mlx-lm / mlx-vlm it resolved to, so
    filtering on a release keeps the resolved cells that run it."""
    display, axis, _ = release_of(cell)
    if axis != "resolved":
        return [display]
    found = [cell.base, f"lm {cell.pins['mlx-lm']}" if "mlx-lm" in cell.pins else ""]
    found.append(f"vlm {cell.pins['mlx-vlm']}" if "mlx-vlm" in cell.pins else "")
    return [r for r in found if r]


def _tokens(values: Iterable[str]) -> str:
    """`|lm 0.31.3|latest|` for a data-rels attribute (the page's script matches `|value|`)."""
    return "|" + "|".join(values) + "|"


def release_options(cells: list[ReportCell]) -> list[str]:
    """Every release a cell runs, pinned first (mlx-lm, then mlx-vlm, by version), then the
    resolved cells by name."""
    pinned = {release_of(c)[0]: release_of(c) for c in cells if release_of(c)[1] != "resolved"}
    order = sorted(pinned.values(), key=lambda r: (r[1], _version(r[2]), r[0]))
    resolved = dict.fromkeys(c.base for c in cells if release_of(c)[1] == "resolved")
    return [r[0] for r in order] + list(resolved)


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


def mark_title(subject: str, release: str, mark: Mark) -> str:
    """The hover text of a grid mark: what its word and each suffix mean."""
    parts = [MEANING[mark.standing]]
    parts += [text for key, text in SUFFIX.items() if key in mark.code[len(CODE[mark.standing]):]]
    return f"{subject} on {release}: {'; '.join(parts)}"


def standing_of(code: str) -> str:
    """The standing a mark's word names (`n/r+c*` -> cannot-run), for its colour."""
    return next((k for k, word in sorted(CODE.items(), key=lambda kv: -len(kv[1]))
                 if code.startswith(word)), "absent")


def ticks(text: str) -> Markup:
    """Text with `code` spans (as report/front.py writes marks into sentences), escaped."""
    from markupsafe import Markup, escape

    return Markup(re.sub(r"`([^`<>]+)`", r"<code>\1</code>", str(escape(text))))


def headline(report: CompatDoc, changes: Changes) -> dict[str, object]:
    counts = fault_counts(report)
    by_fault = [(f, FAULT_WORDS[f], sum(n for (g, _), n in counts.items() if g == f))
                for f in FAULTS if f in FAULT_WORDS]
    regress = ("none possible: the baseline was accepted from this run" if changes.same_run
               else f"{len(changes.regressions)}" if changes.baseline else "no baseline")
    return {"summary": f"{len(report.cells)} cells · {len(report.results):,} rows · unexpected "
                       f"{report.unexpected}", "regress": regress, "by_fault": by_fault,
            "fixed": sum(1 for r in report.results if r.fault == "fixed-by-subject")}


def render_html(report: CompatDoc, changes: Changes, extra: list[str] | None = None) -> str:
    """The whole page; `extra` holds pre-rendered, already escaped HTML sections."""
    import jinja2
    from markupsafe import Markup as markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mlxcompat.report", "templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    )
    env.globals.update(zip=zip, dict=dict, code=CODE, span=span, fault_words=FAULT_WORDS,
                       mark_title=mark_title, standing_of=standing_of, top=TOP_PROBLEMS,
                       upstream=UPSTREAM)
    env.filters.update(num=lambda n: f"{n:,}", ticks=ticks)
    pages, front_notes = front_pages(report, report.requires, report.releases)
    notes: dict[int, int] = dict(front_notes)
    tables = verdict_tables(report, notes)
    by_index = {e.index: e for e in report.expectations}
    footnotes = [(n, by_index[i]) for i, n in sorted(notes.items(), key=lambda kv: kv[1])
                 if i in by_index]
    rels = {c.cell: _tokens(releases_of(c)) for c in report.cells}
    col_rels = {column_label(c): rels[c.cell] for c in report.cells}
    bench = {}
    for backend, rows in by_backend(bench_rows(report)).items():
        bench[backend] = {"compact": compact(report, rows), "full": full_rows(rows),
                          "devices": ", ".join(sorted({b.device for b in rows if b.device}))}
    results = report.results
    return env.get_template("compat.html.j2").render(
        report=report, changes=changes, head=headline(report, changes), pages=pages,
        subject_axes=report.subject_axes,
        meaning=MEANING, suffixes=SUFFIX, tables=tables, footnotes=footnotes,
        banner=banner(report), since=report.since, rels=rels, col_rels=col_rels,
        releases=release_options(report.cells),
        subjects=sorted({r.subject for r in results if r.subject}),
        models=sorted({r.model for r in results if r.model}),
        unexpected=[r for r in results if not r.outcome.expected],
        marks=MARK, status_marks=STATUS_MARK,
        patches=patch_table(report), plots=all_plots(report), bench=bench,
        env=env_rows(report), env_keys=ENV_KEYS,
        extra=[markup(section) for section in (extra or [])],
    )
