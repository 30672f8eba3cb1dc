"""The front page's columns: one per cell of a runner label, ordered resolved cells first,
then mlx-lm and mlx-vlm releases by version."""

from __future__ import annotations

from dataclasses import dataclass, field

from packaging.version import InvalidVersion, Version

from mlxcompat.records.report import ReportCell


@dataclass
class Column:
    cell: str
    label: str
    release: str
    axis: str
    version: str
    pins: dict[str, str] = field(default_factory=dict)


def release_of(cell: ReportCell) -> tuple[str, str, str]:
    """(display, axis, version) of a cell: `lm 0.31.3`, `vlm 0.7.10`, or a resolved cell."""
    pins, base = cell.pins, cell.base
    if not base.startswith(("mlx-lm-", "mlx-vlm-")):
        lm = pins.get("mlx-lm", "?")
        return f"{base} (lm {lm})", "resolved", lm
    if "mlx-vlm" in pins:
        return f"vlm {pins['mlx-vlm']}", "mlx-vlm", pins["mlx-vlm"]
    return f"lm {pins.get('mlx-lm', '?')}", "mlx-lm", pins.get("mlx-lm", "0")


def columns_of(cells: list[ReportCell], label: str) -> list[Column]:
    return sorted((Column(c.cell, label, *release_of(c), dict(c.pins)) for c in cells),
                  key=lambda c: (("resolved", "mlx-lm", "mlx-vlm").index(c.axis),
                                 _version(c.version), c.cell))


def _version(text: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")
