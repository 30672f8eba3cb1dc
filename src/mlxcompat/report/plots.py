"""Plots for the HTML report (matplotlib, Agg backend), returned as base64 PNGs."""

from __future__ import annotations

import base64
import io
import math
from collections import defaultdict
from typing import Any

from packaging.version import InvalidVersion, Version

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


def _figure(width: float = 9.0, height: float = 3.6, **grid: Any) -> tuple[Any, Any]:
    """A figure and its axes (`grid`: plt.subplots' layout arguments)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt.subplots(figsize=(width, height), **grid)


def _legend(ax: Any) -> None:
    """Beside the axes, never on top of the data."""
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0)


def _axis(release: str) -> str:
    """A column label's axis (report/front.py's release_of writes `lm X`, `vlm Y`, or a
    resolved cell's name with its mlx-lm)."""
    return release.split(" ")[0] if release.startswith(("lm ", "vlm ")) else "resolved"


def _by_version(release: str) -> tuple[Any, ...]:
    try:
        return (Version(release.split(" ")[1]), release)
    except (IndexError, InvalidVersion):
        return (Version("0"), release)


def _groups(releases: list[str]) -> list[tuple[str, list[str]]]:
    """Releases per axis: mlx-lm and mlx-vlm by version, resolved cells as they come."""
    out = []
    for axis in ("lm", "vlm", "resolved"):
        mine = [r for r in dict.fromkeys(releases) if _axis(r) == axis]
        if mine:
            out.append((axis, mine if axis == "resolved" else sorted(mine, key=_by_version)))
    return out


def verdicts_per_release(report: CompatDoc) -> str:
    """Stacked horizontal bars, one per cell (labels read across, never slanted), grouped as
    the grid is: mlx-lm, mlx-vlm, then resolved cells."""
    order = [label for _, labels in _groups([column_label(c) for c in report.cells])
             for label in labels]
    cell_of = {column_label(c): c.cell for c in report.cells}
    counts = {v: [sum(1 for r in report.results if r.cell == cell_of[label] and r.verdict == v)
                  for label in order] for v in VERDICTS}
    fig, ax = _figure(9.0, 1.0 + 0.26 * len(order))
    left = [0] * len(order)
    for verdict in VERDICTS:
        ax.barh(order, counts[verdict], left=left, label=verdict, color=COLORS[verdict])
        left = [a + n for a, n in zip(left, counts[verdict], strict=True)]
    ax.set_xlim(0, max([*left, 1]) * 1.08)  # room after the longest bar, whatever its last part
    ax.invert_yaxis()
    ax.tick_params(axis="y", labelsize=9)
    ax.set_xlabel("results")
    ax.set_title("Verdicts per release")
    _legend(ax)
    return _png(fig)


def tok_s_per_release(rows: list[BenchLine], backend: str) -> str | None:
    """Generation tok/s of subject `none` at each model's largest batch, per release: one
    panel per axis (mlx-lm, mlx-vlm releases), lines only between releases of one axis and
    broken where a release lacks the model; resolved cells as markers only."""
    found = [(b, b.measured.gen_tok_s.median) for b in rows if b.subject == UPSTREAM
             and b.measured is not None and b.measured.gen_tok_s.median]
    if not found:
        return None
    series: dict[str, dict[str, tuple[int, float]]] = defaultdict(dict)
    for b, median in found:
        best = series[b.model].get(b.release)
        if best is None or b.batch >= best[0]:
            series[b.model][b.release] = (b.batch, float(median or 0))
    groups = _groups([b.release for b, _ in found])
    fig, axes = _figure(9.0, 4.0, ncols=len(groups), sharey=True, squeeze=False,
                        gridspec_kw={"width_ratios": [max(len(g), 2) for _, g in groups]})
    names = {"lm": "mlx-lm releases", "vlm": "mlx-vlm releases", "resolved": "resolved cells"}
    for ax, (axis, releases) in zip(axes[0], groups, strict=True):
        for i, (model, points) in enumerate(sorted(series.items())):
            ys = [points[r][1] if r in points else math.nan for r in releases]
            ax.plot(releases, ys, marker="o", color=f"C{i}", label=model,
                    linestyle="none" if axis == "resolved" else "-")
        ax.set_title(names[axis], fontsize=9)
        ax.set_xticks(range(len(releases)), [r.replace(" (", "\n(") for r in releases])
        ax.tick_params(axis="x", rotation=90, labelsize=8)
    axes[0][0].set_ylabel("generation tok/s")
    fig.suptitle(f"Generation throughput per release on {backend} (largest batch, no patch)")
    _legend(axes[0][-1])
    return _png(fig)


def speedup_per_batch(rows: list[BenchLine], backend: str) -> str | None:
    """Batched / sequential speedup against batch size per model, newest release (no patch)."""
    found = [(b, b.measured.speedup) for b in rows if b.subject == UPSTREAM
             and b.measured is not None and b.measured.speedup is not None]
    if not found:
        return None
    latest = {b.model: b.cell for b, _ in found}
    series = {model: sorted((b.batch, float(speed or 0)) for b, speed in found
                            if b.cell == cell and b.model == model)
              for model, cell in sorted(latest.items())}
    curves = {m: pts for m, pts in series.items() if len(pts) > 1}
    fig, ax = _figure()
    for model, pts in (curves or series).items():  # a lone batch beside a curve adds nothing
        cell = latest[model]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"{model} ({cell})")
    ax.set_xscale("log", base=2)
    batches = sorted({b.batch for b, _ in found})
    ax.set_xticks(batches, [str(n) for n in batches])
    ax.minorticks_off()
    ax.set_xlabel("batch size")
    ax.set_ylabel("speedup over sequential")
    ax.set_title(f"Batching speedup per batch size on {backend}")
    _legend(ax)
    return _png(fig)


def batching_curve(rows: list[BenchLine], backend: str) -> str | None:
    """Decode tok/s against batch size in the newest cell that measured several, one panel
    per model (and dtype / prompt shape), one line per subject, its 95% interval as a band."""
    found = [b for b in rows if b.measured is not None and b.measured.gen_tok_s.median
             and len(b.measured.gen_tok_s.ci95) == 2]
    batches: dict[tuple[str, str], set[int]] = defaultdict(set)
    for b in found:
        batches[(b.cell, b.model)].add(b.batch)
    curves: dict[str, str] = {}  # model label -> the newest cell with several batches of it
    for b in sorted(found, key=lambda b: _by_version(b.release)):
        if len(batches[(b.cell, b.model)]) > 1:
            curves[b.model] = b.cell
    if not curves:
        return None
    ncols = min(3, len(curves))
    nrows = math.ceil(len(curves) / ncols)
    fig, axes = _figure(9.0, 3.0 * nrows, nrows=nrows, ncols=ncols, squeeze=False,
                        layout="constrained")
    subjects = sorted({b.subject for b in found if curves.get(b.model) == b.cell})
    shown: dict[str, Any] = {}  # subject -> its line, for one legend over every panel
    for ax, (model, cell) in zip(axes.flat, sorted(curves.items()), strict=False):
        for i, subject in enumerate(subjects):
            pts = sorted((b.batch, *b.measured.gen_tok_s.ci95, b.measured.gen_tok_s.median)
                         for b in found if (b.cell, b.model, b.subject) == (cell, model, subject)
                         and b.measured is not None)
            if not pts:
                continue
            xs = [p[0] for p in pts]
            ax.fill_between(xs, [p[1] for p in pts], [p[2] for p in pts], color=f"C{i}",
                            alpha=0.15, linewidth=0)
            (shown[subject],) = ax.plot(xs, [p[3] for p in pts], marker="o", markersize=3,
                                        color=f"C{i}", label=subject)
        ax.set_xscale("log", base=2)
        ticks = sorted(batches[(cell, model)])
        ax.set_xticks(ticks, [str(n) for n in ticks])
        ax.minorticks_off()
        ax.set_title(f"{model}\n{cell}", fontsize=8)
        ax.tick_params(labelsize=8)
    for ax in list(axes.flat)[len(curves):]:
        ax.set_visible(False)
    fig.supxlabel("batch size", fontsize=9)
    fig.supylabel("decode tok/s (median, 95% band)", fontsize=9)
    fig.suptitle(f"Batching curve on {backend}, every subject")
    fig.legend([shown[s] for s in subjects if s in shown], [s for s in subjects if s in shown],
               fontsize=8, loc="outside right upper")
    return _png(fig)


def all_plots(report: CompatDoc) -> list[tuple[str, str]]:
    """(title, base64 PNG) for every plot that has data; throughput plots per backend."""
    plots = [("Verdicts per release", verdicts_per_release(report))]
    for backend, rows in by_backend(bench_rows(report)).items():
        for title, fn in ((f"Throughput per release ({backend})", tok_s_per_release),
                          (f"Speedup per batch size ({backend})", speedup_per_batch),
                          (f"Batching curve ({backend})", batching_curve)):
            png = fn(rows, backend)
            if png:
                plots.append((title, png))
    return plots
