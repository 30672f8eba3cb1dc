"""What the page stands on: where each runner label's cells ran (platform, backend, device),
when, by which harness, in which runs, and the one thing no run here covers: Metal."""

from __future__ import annotations

import time
from dataclasses import dataclass

from mlxcompat.records.report import CompatDoc


@dataclass
class Where:
    label: str  # "" for this machine's default runner
    cells: int
    platforms: list[str]
    backends: list[str]
    devices: list[str]
    forced_cpu: bool


@dataclass
class Context:
    where: list[Where]
    first: str  # UTC date-time of the earliest and the latest cell finished
    last: str
    runs: list[str]  # run ids
    harness: list[str]
    metal: bool  # some cell ran on Metal


def _when(stamp: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(stamp)) if stamp else "unknown"


def context(report: CompatDoc) -> Context:
    where = []
    for label in sorted({c.label for c in report.cells}):
        cells = [c for c in report.cells if c.label == label]
        where.append(Where(label, len(cells),
                           sorted({c.env.platform for c in cells if c.env.platform}),
                           sorted({c.env.backend for c in cells if c.env.backend}),
                           sorted({c.env.device_name for c in cells if c.env.device_name}),
                           any(c.env.forced_cpu for c in cells)))
    stamps = [c.finished for c in report.cells if c.finished]
    return Context(where, _when(min(stamps) if stamps else None),
                   _when(max(stamps) if stamps else None),
                   sorted({c.run_id for c in report.cells if c.run_id}),
                   sorted({c.harness for c in report.cells if c.harness}),
                   any(c.env.backend == "metal" for c in report.cells))


def banner(report: CompatDoc) -> list[str]:
    """Plain lines for the top of the page."""
    found = context(report)
    lines = []
    for w in found.where:
        name = w.label or "this machine"
        devices = ", ".join(w.devices[:3]) or "unknown device"
        forced = " (a GPU was passed over for the CPU)" if w.forced_cpu else ""
        lines.append(f"{name}: {w.cells} cells on {', '.join(w.platforms) or 'unknown'}, "
                     f"backend {', '.join(w.backends) or 'unknown'} ({devices}){forced}")
    if not found.metal:
        lines.append("no Metal run: no verdict here comes from Apple silicon's GPU")
    runs = ", ".join(found.runs[:4]) + (" …" if len(found.runs) > 4 else "")
    lines.append(f"cells finished {found.first} – {found.last}; run {runs or 'unknown'}; "
                 f"harness {'; '.join(found.harness) or 'not recorded (older cells)'}")
    return lines
