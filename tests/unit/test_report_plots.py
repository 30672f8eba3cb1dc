"""The report's plots as a reader sees them: no line joins releases of different axes (mlx-lm,
mlx-vlm, resolved cells), tick labels do not overlap and are not tiny, and no bar is cut off.
The figures are caught where report/plots.py turns them into PNGs."""

from __future__ import annotations

import math
from typing import Any

import pytest

from mlxcompat.records.bench import MeasuredBench, Spread
from mlxcompat.records.report import CompatDoc, Outcome, ReportCell, ReportRow
from mlxcompat.report import plots
from mlxcompat.report.throughput import BenchLine

pytest.importorskip("matplotlib")


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    caught: list[Any] = []
    monkeypatch.setattr(plots, "_png", lambda fig: caught.append(fig) or "png")
    return caught


def _axis(label: str) -> str:
    return label.split(" ")[0] if label.startswith(("lm ", "vlm ")) else "resolved"


def _line(release: str, model: str, median: float, cell: str = "") -> BenchLine:
    measured = MeasuredBench(model=model, subject="none", batch=8, backend="cpu",
                             gen_tok_s=Spread(rounds=3, median=median), prefill_tok_s=Spread())
    return BenchLine(cell or release, release, "cpu", "cpu", model, "none", 8, measured, "")


def _joined(fig: Any) -> list[tuple[str, str]]:
    """Every pair of neighbouring points a drawn line joins, as their x labels."""
    pairs = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if line.get_linestyle() in ("None", "", " "):
                continue
            xs, ys = list(line.get_xdata(orig=True)), list(line.get_ydata(orig=True))
            pairs += [(str(xs[i]), str(xs[i + 1])) for i in range(len(xs) - 1)
                      if not math.isnan(float(ys[i])) and not math.isnan(float(ys[i + 1]))]
    return pairs


def _readable(fig: Any) -> None:
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        labels = [t for t in ax.get_xticklabels() + ax.get_yticklabels()
                  if t.get_text() and t.get_visible()]
        assert all(t.get_fontsize() >= 8 for t in labels), "tick labels smaller than 8 pt"
        boxes = [t.get_window_extent(renderer) for t in labels]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                assert not a.overlaps(b), f"tick labels overlap: {labels[boxes.index(a)]}"


def test_throughput_lines_never_join_releases_of_different_axes(figures: list[Any]) -> None:
    rows = [_line(r, m, v) for m in ("llama", "mamba2") for r, v in (
        ("lm 0.30.4", 90.0), ("lm 0.32.2", 100.0), ("vlm 0.7.10", 70.0),
        ("latest (lm 0.32.2)", 95.0), ("as-installed-vllm-mlx-0.6.0 (lm 0.31.3)", 93.0))]
    assert plots.tok_s_per_release(rows, "cpu")
    joined = _joined(figures[0])
    assert ("lm 0.30.4", "lm 0.32.2") in joined, joined  # one axis: a line
    crossing = [(a, b) for a, b in joined if _axis(a) != _axis(b) or _axis(a) == "resolved"]
    assert not crossing, crossing
    _readable(figures[0])


def test_a_release_missing_from_a_series_breaks_its_line(figures: list[Any]) -> None:
    rows = [_line(r, "llama", 100.0) for r in ("lm 0.30.4", "lm 0.31.3", "lm 0.32.2")]
    rows += [_line(r, "mamba2", 50.0) for r in ("lm 0.30.4", "lm 0.32.2")]
    assert plots.tok_s_per_release(rows, "cpu")
    assert ("lm 0.30.4", "lm 0.32.2") not in _joined(figures[0]), "a line across a gap"


def _report() -> CompatDoc:
    """The committed full run's 29 cells (their names and pins), a few rows on each."""
    lm = ["0.28.0", "0.28.1", "0.28.2", "0.28.3", "0.28.4", "0.29.1", "0.30.0", "0.30.2",
          "0.30.4", "0.30.5", "0.30.6", "0.30.7", "0.31.1", "0.31.2", "0.31.3", "0.32.0",
          "0.32.1", "0.32.2"]
    cells = [ReportCell(cell=f"mlx-lm-{v}", base=f"mlx-lm-{v}", pins={"mlx-lm": v}) for v in lm]
    cells += [ReportCell(cell=f"mlx-vlm-{v}", base=f"mlx-vlm-{v}",
                         pins={"mlx-lm": "0.32.2", "mlx-vlm": v})
              for v in ("0.3.10", "0.4.4", "0.5.0", "0.6.4", "0.7.8", "0.7.10")]
    cells += [ReportCell(cell=name, base=name, pins={"mlx-lm": v, "mlx-vlm": "0.7.10"})
              for name, v in (("as-installed-vllm-mlx-0.2.5", "0.30.4"),
                              ("as-installed-vllm-mlx-0.6.0", "0.31.3"), ("latest", "0.32.2"))]
    cells += [ReportCell(cell=f"{c}@cuda", base=c, label="cuda", pins=dict(p)) for c, p in (
        ("mlx-lm-0.32.2", {"mlx-lm": "0.32.2"}),
        ("mlx-vlm-0.7.10", {"mlx-lm": "0.32.2", "mlx-vlm": "0.7.10"}))]
    rows = [ReportRow(cell=c.cell, check="parity", subject="none", verdict=v,
                      outcome=Outcome(expected=True))
            for i, c in enumerate(cells) for v in ("pass",) * (40 + i) + ("fail", "error") * 9]
    return CompatDoc(cells=cells, results=rows)


def test_verdict_bars_fit_and_their_labels_are_readable(figures: list[Any]) -> None:
    plots.verdicts_per_release(_report())
    fig = figures[0]
    _readable(fig)
    renderer = fig.canvas.get_renderer()
    for ax in fig.axes:
        frame = ax.get_window_extent(renderer)
        bars = [b.get_window_extent(renderer) for b in ax.patches]
        assert all(frame.x0 - 0.5 <= b.x0 and b.x1 <= frame.x1 + 0.5 and frame.y0 - 0.5 <= b.y0
                   and b.y1 <= frame.y1 + 0.5 for b in bars), "a bar runs past its axes"
        right, top = max(b.x1 for b in bars), max(b.y1 for b in bars)
        assert right < frame.x1 - 1 and top < frame.y1 - 1, (
            "the longest bar ends at the edge of the axes: it reads as cut off")


def _curve_point(subject: str, model: str, batch: int, median: float,
                 cell: str = "mlx-lm-0.32.2") -> BenchLine:
    measured = MeasuredBench(model=model, subject=subject, batch=batch, backend="cpu",
                             gen_tok_s=Spread(rounds=7, median=median,
                                              ci95=[median * 0.9, median * 1.1]),
                             prefill_tok_s=Spread())
    return BenchLine(cell, "lm 0.32.2" if cell == "mlx-lm-0.32.2" else "lm 0.31.3", "cpu",
                     "cpu", model, subject, batch, measured, "")


def test_the_batching_curve_has_a_line_and_a_band_per_subject_and_a_panel_per_model(
        figures: list[Any]) -> None:
    rows = [_curve_point(s, m, b, 100.0 * b * (1.1 if s == "none" else 1.0))
            for s in ("none", "mlxcompat") for m in ("llama (curve)", "mamba2 (curve)")
            for b in (1, 2, 4, 8, 16, 32)]
    rows.append(_curve_point("none", "llama (mixed, quick)", 8, 700.0))  # one batch: no panel
    rows.append(_curve_point("none", "qwen3_5", 8, 600.0, cell="mlx-lm-0.31.3"))
    assert plots.batching_curve(rows, "cpu") == "png"
    fig = figures[-1]
    shown = [ax for ax in fig.axes if ax.get_visible() and ax.get_title()]
    assert [ax.get_title() for ax in shown] == ["llama (curve)\nmlx-lm-0.32.2",
                                                "mamba2 (curve)\nmlx-lm-0.32.2"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == ["mlxcompat", "none"]
    for ax in shown:
        assert [line.get_label() for line in ax.get_lines()] == ["mlxcompat", "none"]
        assert [list(line.get_xdata()) for line in ax.get_lines()] == [[1, 2, 4, 8, 16, 32]] * 2
        assert len(ax.collections) == 2  # one band each
    _readable(fig)
    assert plots.batching_curve(rows[-2:], "cpu") is None  # no cell measured two batches
