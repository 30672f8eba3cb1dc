"""A verdict that flips between neighbouring cells with PyPI releases between them is named,
with the releases and the other pins that changed too; an exact boundary is not."""

from __future__ import annotations

from mlxcompat.gaps import find_gaps
from mlxcompat.records.report import CompatDoc, Outcome, ReportCell, ReportRow


def _cell(vlm: str, mlx: str) -> ReportCell:
    return ReportCell(cell=f"mlx-vlm-{vlm}", base=f"mlx-vlm-{vlm}",
                      pins={"mlx-vlm": vlm, "mlx-lm": "0.32.2", "mlx": mlx})


def _row(vlm: str, verdict: str) -> ReportRow:
    return ReportRow(check="glm4v", subject="vllm-mlx-0.6.0", verdict=verdict,
                     model="glm4v_moe", scenario="padded", path="inner",
                     cell=f"mlx-vlm-{vlm}", outcome=Outcome(expected=True))


def test_the_0_7_9_release_between_two_cells_is_named() -> None:
    report = CompatDoc(cells=[_cell("0.7.8", "0.32.3"), _cell("0.7.10", "0.32.4")],
                       results=[_row("0.7.8", "fail"), _row("0.7.10", "pass")],
                       releases={"mlx-vlm": ["0.7.8", "0.7.9", "0.7.10"]})
    (gap,) = find_gaps(report)
    assert (gap.axis, gap.low, gap.high, gap.unmeasured) == ("mlx-vlm", "0.7.8", "0.7.10",
                                                             ["0.7.9"])
    assert gap.flips == ["vllm-mlx-0.6.0 glm4v glm4v_moe padded/inner: fail -> pass"]
    assert gap.others == ["mlx 0.32.3 -> 0.32.4"]


def test_neighbouring_releases_or_no_flip_name_nothing() -> None:
    cells = [_cell("0.7.9", "0.32.4"), _cell("0.7.10", "0.32.4")]
    flip = CompatDoc(cells=cells, results=[_row("0.7.9", "fail"), _row("0.7.10", "pass")],
                     releases={"mlx-vlm": ["0.7.8", "0.7.9", "0.7.10"]})
    assert find_gaps(flip) == []
    same = CompatDoc(cells=[_cell("0.7.8", "0.32.3"), cells[1]],
                     results=[_row("0.7.8", "pass"), _row("0.7.10", "pass")],
                     releases={"mlx-vlm": ["0.7.8", "0.7.9", "0.7.10"]})
    assert find_gaps(same) == []
