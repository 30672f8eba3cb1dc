"""The report's records (compat.json, schema 3): rows placed in their cell and judged."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

from pydantic import ConfigDict, Field

from mlxcompat.records.base import Record, RecordError
from mlxcompat.records.bench import BenchRow
from mlxcompat.records.cell import Environment, Fingerprint, InstallRecord, SubjectCounts
from mlxcompat.records.names import KEYS, SCHEMA, Fault, Severity
from mlxcompat.records.patches import PatchRow
from mlxcompat.records.rows import About, ResultRow


class Outcome(Record):
    """A verdict judged against matrix.yaml: `expected` when an expectation covers it and it
    is within that entry's bounds, or when it passed or skipped with none covering it."""

    expected: bool
    expectation: int | None = None
    reason: str = ""
    link: str = ""
    why: str = ""  # why it is unexpected


class Placed(Record):
    """Where a row ran: its cell document's name, the matrix cell and the runner label."""

    cell: str
    base: str = ""
    label: str = ""
    backend: str = ""


class ReportRow(ResultRow, Placed):
    outcome: Outcome
    fault: Fault | None = None
    severity: Severity | None = None


class ReportPatch(PatchRow):
    cell: str


class ReportBench(Record):
    cell: str
    fingerprint: Fingerprint = Field(default_factory=Fingerprint)
    row: BenchRow


class ReportCell(Record):
    cell: str
    base: str
    label: str = ""
    pins: dict[str, str] = Field(default_factory=dict)
    env: Environment = Field(default_factory=Environment)
    install: InstallRecord = Field(default_factory=InstallRecord)
    subjects: dict[str, SubjectCounts] = Field(default_factory=dict)
    run_id: str = ""
    harness: str = ""
    finished: float | None = None


class ExpectationUse(Record):
    index: int
    label: str
    verdict: str
    reason: str
    link: str = ""
    open: bool = False
    covered: int = 0
    outside_bounds: int = 0


class Change(Placed):
    """A row whose verdict changed against the baseline."""

    check: str
    subject: str
    model: str = ""
    mode: str = ""
    role: str = ""
    scenario: str = ""
    path: str = ""
    test: str = ""
    dtype: str = ""
    verdict: str = ""
    expected: bool = True
    fault: Fault | None = None
    severity: Severity | None = None
    detail: str = ""
    change: str

    @property
    def about(self) -> About:
        return About(self.check, *(str(getattr(self, k)) for k in KEYS))


class ThroughputMove(Record):
    """A gating row that moved beyond the threshold against the baseline: its decode tok/s
    (`measure` tok/s, rounds of both runs resampled apart), or a subject's overhead against
    `none` (`measure` overhead: paired within each run, so a loaded machine moves both sides
    alike)."""

    cell: str
    model: str
    subject: str
    batch: int
    measure: Literal["tok/s", "overhead"] = "tok/s"
    before: float | None
    after: float | None
    change: float
    ci95: list[float]


class Ungated(Record):
    """A gating row the gate could not judge, and why: a failure, never a silent pass."""

    cell: str
    model: str
    subject: str
    batch: int
    why: str


class Changes(Record):
    baseline: bool = False
    same_run: bool = False  # the baseline was accepted from this very run
    regressions: list[Change] = Field(default_factory=list)
    new_passes: list[Change] = Field(default_factory=list)
    new_rows: int = 0
    throughput: list[ThroughputMove] = Field(default_factory=list)
    ungated: list[Ungated] = Field(default_factory=list)
    threshold: float = 0.2
    no_baseline: list[str] = Field(default_factory=list)


class Since(Record):
    """What changed since an earlier report: rows whose verdict, fault or severity moved, and
    rows that are new or vanished. `same_run`: the earlier report is this very run (nothing
    could have changed; said, never shown as "0 changes")."""

    previous: str
    same_run: bool = False
    changed: list[Change] = Field(default_factory=list)
    new: list[Change] = Field(default_factory=list)
    vanished: list[Change] = Field(default_factory=list)


class AxisLine(Record):
    """A subject family's releases on one cell, run-length coded (report/subject_axis.py), and
    the rows that moved between neighbouring releases."""

    family: str
    cell: str
    line: str  # `vllm-mlx on mlx-lm-0.30.5: ≤ 0.2.0 no patch · …`
    behaviour: str = ""  # the part after the cell: what each run of releases does there
    changes: list[str] = Field(default_factory=list)
    shared: dict[str, str] = Field(default_factory=dict)  # release -> release whose run it took


class CompatDoc(Record):
    """compat.json: every cell, row, patch and throughput row of the run, judged."""

    schema_: int = Field(SCHEMA, alias="schema")
    cells: list[ReportCell] = Field(default_factory=list)
    results: list[ReportRow] = Field(default_factory=list)
    patches: list[ReportPatch] = Field(default_factory=list)
    bench: list[ReportBench] = Field(default_factory=list)
    counts: dict[str, int] = Field(default_factory=dict)
    unexpected: int = 0
    expected_failures: int = 0
    install_failed: list[str] = Field(default_factory=list)
    expectations: list[ExpectationUse] = Field(default_factory=list)
    problems: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    strays: list[str] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    tag: str = "all"
    requires: dict[str, dict[str, str]] = Field(default_factory=dict)
    releases: dict[str, list[str]] = Field(default_factory=dict)  # axis -> PyPI releases
    full_run: bool = False
    families: dict[str, list[str]] = Field(default_factory=dict)  # family -> subjects, oldest first
    subject_axes: list[AxisLine] = Field(default_factory=list)
    changes: Changes = Field(default_factory=Changes)
    since: Since | None = None

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(by_alias=True)


def read_compat(path: Path) -> CompatDoc:
    """compat.json (a baseline, say) of schema 3, or of schema 2 with its rows migrated."""
    from mlxcompat.records.migrate import bench_v2, env_v2, install_v2, report_row_v2

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RecordError(f"{path.name}: unreadable ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise RecordError(f"{path.name}: not a JSON object")
    if data.get("schema") == 2:
        data = {"schema": SCHEMA,
                "cells": [{**c, "env": env_v2(c.get("env") or {}),
                           "install": install_v2(c.get("install") or {})}
                          for c in data.get("cells", [])],
                "results": [report_row_v2(r) for r in data.get("results", [])],
                "bench": [{"cell": b["cell"], "fingerprint": b.get("fingerprint") or {},
                           "row": bench_v2({k: v for k, v in b.items()
                                            if k not in ("cell", "fingerprint")})}
                          for b in data.get("bench", [])]}
    elif data.get("schema") != SCHEMA:
        raise RecordError(f"{path.name}: schema {data.get('schema')!r}, this mlxcompat reads "
                          f"{SCHEMA} (and 2); accept a new one (--accept)")
    return CompatDoc.from_json(data, path.name)
