"""Releases between two neighbouring cells where a verdict flips: the boundary the report
cannot state exactly until the release in between is measured (a cell, or `bisect`).

Read from a compat.json (its rows and the PyPI release lists the drift scan recorded); no
network, no run.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

from packaging.version import Version

from mlxcompat.records.names import BAD
from mlxcompat.records.report import CompatDoc
from mlxcompat.records.rows import About
from mlxcompat.report.boundaries import between
from mlxcompat.report.columns import Column, release_of


@dataclass
class Gap:
    axis: str
    low: str
    high: str
    unmeasured: list[str]
    flips: list[str] = field(default_factory=list)  # "subject check … : fail -> pass"
    others: list[str] = field(default_factory=list)  # other pins that change too

    def bisect_hint(self) -> str:
        return (f"mlxcompat bisect --axis {self.axis} --between {self.low} {self.high} "
                "--check … --model … --subject …")


def find_gaps(report: CompatDoc) -> list[Gap]:
    columns = sorted((Column(c.cell, c.label, *release_of(c), dict(c.pins))
                      for c in report.cells if not c.label), key=lambda c: c.cell)
    by_axis: dict[str, list[Column]] = defaultdict(list)
    for col in columns:
        if col.axis != "resolved":
            by_axis[col.axis].append(col)
    verdicts: dict[tuple[str, About, str], str] = {
        (r.cell, r.about, r.subject): r.verdict for r in report.results if not r.label}
    gaps = []
    for axis, cols in by_axis.items():
        cols.sort(key=lambda c: Version(c.version))
        for low, high in pairwise(cols):
            unmeasured = between(report.releases, axis, low.version, high.version)
            if not unmeasured:
                continue
            others = [f"{k} {low.pins.get(k)} -> {high.pins.get(k)}" for k in ("mlx-lm", "mlx")
                      if k != axis and low.pins.get(k) != high.pins.get(k)]
            gap = Gap(axis, low.version, high.version, unmeasured, others=others)
            for (cell, about, subject), verdict in verdicts.items():
                if cell != low.cell:
                    continue
                after = verdicts.get((high.cell, about, subject))
                if after is not None and (verdict in BAD) != (after in BAD) \
                        and "skip" not in (verdict, after):
                    gap.flips.append(f"{subject} {about.text}: {verdict} -> {after}")
            if gap.flips:
                gaps.append(gap)
    return gaps
