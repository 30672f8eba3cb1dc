"""compat.html: the Markdown report's content as one standalone, filterable page (jinja2).

Autoescaping is on: error messages, versions and device names come from cell JSONs and are
untrusted. Plots are embedded as data URIs; nothing is fetched from the network.
"""

from __future__ import annotations

from typing import Any

from mlxcompat.report.plots import all_plots
from mlxcompat.report.tables import (
    ENV_KEYS,
    MARK,
    Notes,
    bench_rows,
    by_backend,
    env_rows,
    patch_table,
    verdict_tables,
)


def render_html(report: dict[str, Any], changes: dict[str, Any],
                extra: list[str] | None = None) -> str:
    """The whole page; `extra` holds pre-rendered, already escaped HTML sections."""
    import jinja2
    from markupsafe import Markup

    env = jinja2.Environment(
        loader=jinja2.PackageLoader("mlxcompat.report", "templates"),
        autoescape=True, trim_blocks=True, lstrip_blocks=True,
    )
    env.globals.update(zip=zip, dict=dict)
    notes = Notes()
    tables = verdict_tables(report, notes)
    results = report["results"]
    filters = {
        "model": sorted({r["model"] for r in results if r["model"]}),
        "subject": sorted({r["subject"] for r in results if r["subject"]}),
        "verdict": list(MARK),
    }
    counts = " · ".join(f"{v} {n}" for v, n in report["counts"].items())
    n_failed = len(report["install_failed"])
    failed = f" ({n_failed} install failed)" if n_failed else ""
    text = f"{len(report['cells'])} cells{failed} · {counts} · unexpected: {report['unexpected']}"
    return env.get_template("compat.html.j2").render(
        report=report, headline=text, filters=filters, tables=tables,
        unexpected=[r for r in results if r["outcome"] == "unexpected"],
        legend=" · ".join(f"{g} {v}" for v, g in MARK.items())
        + " · * expected per matrix.yaml · ! unexpected (outlined) · [n] footnote",
        patches=patch_table(report),
        plots=all_plots(report), bench=by_backend(bench_rows(report)), env=env_rows(report),
        env_keys=ENV_KEYS, notes=list(notes.texts),
        extra=[Markup(section) for section in (extra or [])],
    )
