"""One cell document from the subject processes' parts, checked for completeness.

A part is what a subject process recorded. The runner knows how many rows each subject
collected; a process that exited with anything but 0/1, was killed, ran out of time, never
started, wrote an unreadable record or recorded fewer rows than it collected adds one
`error` row naming the cause and the tail of its output. Reused subjects (`--reuse`) are
copied from the previous document; a subject that shares another's run (byte-identical entry
points' modules, `mlxcompat.sharing`) gets that run's rows, and one whose entry points were
observed to change nothing gets `none`'s behaviour rows (`mlxcompat.borrow`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from mlxcompat.bench import add_overhead
from mlxcompat.borrow import borrow_rows
from mlxcompat.records.base import RecordError
from mlxcompat.records.bench import BenchRow, MeasuredBench, SequentialBench
from mlxcompat.records.cell import CellDoc, SubjectCounts
from mlxcompat.records.names import UPSTREAM
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.rows import ResultRow
from mlxcompat.sharing import share_rows
from mlxcompat.spec import RunOptions

PYTEST_CODES = {2: "interrupted or collection error", 3: "pytest internal error",
                4: "pytest usage error", 5: "no tests were collected"}


@dataclass
class Part:
    """A subject process (its worker record) and what it wrote."""

    worker: Any  # workers.Worker
    doc: dict[str, Any] | None
    benchmarks: dict[str, Any] | None


def _read(part: Part) -> tuple[CellDoc | None, str]:
    if part.doc is None:
        return None, ""
    try:
        return CellDoc.from_json(part.doc, f"{part.worker.name}'s record"), ""
    except RecordError as exc:
        return None, f"subject process wrote an unreadable record: {exc}"


def _why(worker: Any, doc: CellDoc | None, budget: float) -> str:
    """Why a subject process's record cannot be trusted as complete ('' when it can)."""
    if worker.timed_out:
        return f"timed out: the cell's {budget:.0f}s budget ran out in this subject"
    code = worker.code
    if code is not None and code < 0:
        return f"subject process killed by signal {-code}"
    if code not in (0, 1):
        return f"subject process exited with {code} ({PYTEST_CODES.get(code, 'unknown')})"
    if doc is None:
        return "subject process wrote no results"
    counts = doc.subjects.get(worker.name)
    if counts is None:
        return "subject process recorded no collection count"
    recorded = sum(1 for r in doc.results if r.subject == worker.name)
    if recorded < counts.collected:
        return f"only {recorded} of {counts.collected} collected checks recorded a result"
    if counts.collected == 0:
        return "no checks were collected for this subject"
    return ""


def _tail(worker: Any) -> str:
    lines = [line for line in worker.tail if not line.startswith(("[mlxcompat]", "."))]
    return " | ".join(lines[-4:])[-600:]


def _reuse(doc: CellDoc, previous: CellDoc, name: str) -> None:
    doc.results += [r.model_copy(update={"reused": True}) for r in previous.results
                    if r.subject == name]
    doc.patches += [p.model_copy(update={"reused": True}) for p in previous.patches
                    if p.subject == name]
    doc.bench += [b.model_copy(update={"reused": True}) for b in previous.bench
                  if b.subject == name]
    old = previous.subjects.get(name, SubjectCounts())
    doc.subjects[name] = old.model_copy(update={"reused": True})
    if not doc.env.packages:
        doc.env = previous.env.model_copy()


def merge_cell(opts: RunOptions, parts: dict[str, Part], need: NeedRecord | None,
               started: float) -> tuple[CellDoc, dict[str, Any] | None]:
    """(cell document, pytest-benchmark document of every subject's rounds or None)."""
    run = opts.run
    doc = CellDoc(cell=run.name, run_id=run.run_id, harness=run.harness, started=started,
                  finished=time.time(), inputs=run.inputs,
                  checks=list(run.checks or opts.matrix.run_checks()), only=dict(run.only))
    bench_json: dict[str, Any] = {}
    for subject in opts.subjects:
        name = subject.name
        if name in run.same_as:
            continue  # its rows are the run it shares (below)
        if name in opts.reused and opts.previous is not None:
            _reuse(doc, opts.previous, name)
            continue
        if name not in parts:
            doc.subjects[name] = SubjectCounts()
            doc.results.append(ResultRow.error(
                "run", name, "never started: the cell's time budget ran out first"))
            continue
        part = parts[name]
        part_doc, unreadable = _read(part)
        if part_doc is not None:
            if not doc.env.packages:
                doc.env = part_doc.env
            doc.results += part_doc.results
            doc.patches += part_doc.patches
            doc.bench += part_doc.bench
        counts = (part_doc.subjects.get(name) if part_doc else None) or SubjectCounts()
        counts.recorded = len(part_doc.results) if part_doc else 0
        counts.returncode = part.worker.code
        doc.subjects[name] = counts
        why = unreadable or _why(part.worker, part_doc, run.timeout_s)
        if why:
            tail = _tail(part.worker)
            doc.results.append(ResultRow.error("run", name, why + (f": {tail}" if tail else ""),
                                               metrics={"returncode": part.worker.code}))
        if part.benchmarks:
            bench_json[name] = part.benchmarks
    borrow_rows(doc)
    share_rows(doc, run.same_as, (s.name for s in opts.subjects if getattr(s, "install", ())))
    doc.env.need = need
    doc.env.jobs = run.jobs
    if run.install is not None:
        doc.install = run.install
    doc.bench = fold_sequential(doc.bench)
    add_overhead(doc.bench)
    doc.complete = True
    return doc, combine_benchmarks(bench_json)


def combine_benchmarks(per_subject: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """pytest-benchmark's JSON of every subject in one file (`pytest-benchmark compare`
    reads it); each benchmark's name carries its subject."""
    if not per_subject:
        return None
    first = next(iter(per_subject.values()))
    combined = {k: v for k, v in first.items() if k != "benchmarks"}
    combined["benchmarks"] = []
    for subject, doc in per_subject.items():
        for bench in doc.get("benchmarks", []):
            renamed = dict(bench)
            renamed["name"] = f"{subject}::{bench['name']}"
            renamed["fullname"] = f"{subject}::{bench['fullname']}"
            renamed["group"] = bench.get("group") or subject
            renamed["params"] = {**(bench.get("params") or {}), "subject": subject}
            combined["benchmarks"].append(renamed)
    return combined


def fold_sequential(rows: list[BenchRow]) -> list[BenchRow]:
    """`none`'s one-at-a-time medians into its measured rows (the speedup's baseline); the
    sequential rows themselves are dropped."""
    seq = {(r.model, r.dtype, r.prompts): r for r in rows if isinstance(r, SequentialBench)}
    for r in rows:
        match = seq.get((r.model, r.dtype, r.prompts))
        if isinstance(r, MeasuredBench) and r.subject == UPSTREAM and match is not None:
            r.sequential_tok_s = match.tok_s.median
    return [r for r in rows if not isinstance(r, SequentialBench)]
