"""Plots for the HTML report (matplotlib, Agg backend), returned as base64 PNGs."""

from __future__ import annotations

import base64
import io
from collections import defaultdict
from typing import Any

from mlxcompat.records.names import UPSTREAM, VERDICTS
from mlxcompat.records.report import CompatDoc
from mlxcompat.report.tables import column_label
from mlxcompat.report.throughput import BenchLine, bench_rows, by_backend

COLORS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#6a1b9a", "skip": "#9e9e9e"}


def _png(fig: Any) -> str:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _figure(width: float = 9.0, height: float = 3.6) -> tuple[Any, Any]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height))


def _legend(ax: Any) -> None:
    """Beside the axes, never on top of the data."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def verdicts_per_release(report: CompatDoc) -> str:
    fig, ax = _figure()
    labels = [column_label(c) for c in report.cells]
    bottom = [0] * len(labels)
    for verdict in VERDICTS:
        counts = [sum(1 for r in report.results if r.cell == c.cell and r.verdict == verdict)
                  for c in report.cells]
        ax.bar(labels, counts, bottom=bottom, label=verdict, color=COLORS[verdict])
        bottom = [b + n for b, n in zip(bottom, counts, strict=True)]
    ax.set_ylabel("results")
    ax.set_title("Verdicts per release")
    ax.tick_params(axis="x", rotation=60)
    _legend(ax)
    return _png(fig)


def tok_s_per_release(rows: list[BenchLine], backend: str) -> str | None:
    """Generation tok/s of subject `none` at each model's largest batch, per release."""
    found = [(b, b.measured.gen_tok_s.median) for b in rows if b.subject == UPSTREAM
             and b.measured is not None and b.measured.gen_tok_s.median]
    if not found:
        return None
    series: dict[str, dict[str, tuple[int, float]]] = defaultdict(dict)
    for b, median in found:
        best = series[b.model].get(b.release)
        if best is None or b.batch >= best[0]:
            series[b.model][b.release] = (b.batch, float(median or 0))
    order = list(dict.fromkeys(b.release for b, _ in found))
    fig, ax = _figure()
    for model, points in sorted(series.items()):
        xs = [r for r in order if r in points]
        ax.plot(xs, [points[r][1] for r in xs], marker="o", label=model)
    ax.set_ylabel("generation tok/s")
    ax.set_title(f"Generation throughput per release on {backend} (largest batch, no patch)")
    ax.tick_params(axis="x", rotation=60)
    _legend(ax)
    return _png(fig)


def speedup_per_batch(rows: list[BenchLine], backend: str) -> str | None:
    """Batched / sequential speedup against batch size per model, newest release (no patch)."""
    found = [(b, b.measured.speedup) for b in rows if b.subject == UPSTREAM
             and b.measured is not None and b.measured.speedup is not None]
    if not found:
        return None
    latest = {b.model: b.cell for b, _ in found}
    fig, ax = _figure()
    for model, cell in sorted(latest.items()):
        pts = sorted((b.batch, float(speed or 0)) for b, speed in found
                     if b.cell == cell and b.model == model)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{model} ({cell})")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size")
    ax.set_ylabel("speedup over sequential")
    ax.set_title(f"Batching speedup per batch size on {backend}")
    _legend(ax)
    return _png(fig)


def all_plots(report: CompatDoc) -> list[tuple[str, str]]:
    """(title, base64 PNG) for every plot that has data; throughput plots per backend."""
    plots = [("Verdicts per release", verdicts_per_release(report))]
    for backend, rows in by_backend(bench_rows(report)).items():
        for title, fn in ((f"Throughput per release ({backend})", tok_s_per_release),
                          (f"Speedup per batch size ({backend})", speedup_per_batch)):
            png = fn(rows, backend)
            if png:
                plots.append((title, png))
    return plots
