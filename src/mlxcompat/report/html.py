"""compat.html: the Markdown report's content as one standalone, filterable page (jinja2).

Autoescaping is on: error messages, versions and device names come from cell JSONs and are
untrusted. Plots are embedded as data URIs; nothing is fetched from the network.
"""

from __future__ import annotations

from mlxcompat.records.report import Changes, CompatDoc
from mlxcompat.report.context import banner
from mlxcompat.report.front import front_pages
from mlxcompat.report.markdown import FAULT_WORDS, fault_counts, span
from mlxcompat.report.plots import all_plots
from mlxcompat.report.standing import CODE, MEANING, SUFFIX
from mlxcompat.report.tables import ENV_KEYS, MARK, env_rows, patch_table, verdict_tables
from mlxcompat.report.throughput import bench_rows, by_backend, compact, full_rows


def render_html(report: CompatDoc, changes: Changes, extra: list[str] | None = None) -> str:
    """The whole page; `extra` holds pre-rendered, already escaped HTML sections."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mlxcompat.report", "templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    )
    env.globals.update(zip=zip, dict=dict, code=CODE, span=span, fault_words=FAULT_WORDS)
    pages, front_notes = front_pages(report, report.requires, report.releases)
    notes: dict[int, int] = dict(front_notes)
    tables = verdict_tables(report, notes)
    by_index = {e.index: e for e in report.expectations}
    footnotes = [(n, by_index[i]) for i, n in sorted(notes.items(), key=lambda kv: kv[1])
                 if i in by_index]
    results = report.results
    counts = report.counts
    faults = fault_counts(report)
    headline = (f"{len(report.cells)} cells · {len(results):,} rows · pass "
                f"{counts.get('pass', 0):,} · unexpected {report.unexpected} · regressions "
                + ("none possible (baseline = this run)" if changes.same_run
                   else str(len(changes.regressions))) + " · not passing by fault: "
                + " · ".join(f"{w} {sum(n for (f, _), n in faults.items() if f == k):,}"
                             for k, w in FAULT_WORDS.items()))
    bench = {}
    for backend, rows in by_backend(bench_rows(report)).items():
        bench[backend] = {"compact": compact(report, rows), "full": full_rows(rows)}
    return env.get_template("compat.html.j2").render(
        report=report, changes=changes, headline=headline, pages=pages,
        meaning=MEANING, suffixes=SUFFIX, tables=tables, footnotes=footnotes,
        banner=banner(report),
        releases=[t for t in dict.fromkeys(c for t in tables for c in t.columns)],
        subjects=sorted({r.subject for r in results if r.subject}),
        models=sorted({r.model for r in results if r.model}),
        unexpected=[r for r in results if not r.outcome.expected],
        legend=" · ".join(f"{g} {v}" for v, g in MARK.items()),
        patches=patch_table(report), plots=all_plots(report), bench=bench,
        env=env_rows(report), env_keys=ENV_KEYS,
        extra=[Markup(section) for section in (extra or [])],
    )
