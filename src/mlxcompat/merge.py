"""One cell document from the subject processes' parts, checked for completeness.

A part is what a subject process recorded. The runner knows how many rows each subject
collected; a process that exited with anything but 0/1, was killed, ran out of time, never
started or recorded fewer rows than it collected adds one `error` row naming the cause and
the tail of its output. Reused subjects (`--reuse`) are copied from the previous document.
"""

from __future__ import annotations

import time
from typing import Any

from mlxcompat.bench import add_overhead
from mlxcompat.results import empty_cell, error_row

PYTEST_CODES = {2: "interrupted or collection error", 3: "pytest internal error",
                4: "pytest usage error", 5: "no tests were collected"}


def _why(worker: Any, part: dict[str, Any] | None, budget: float) -> str:
    """Why a subject process's record cannot be trusted as complete ('' when it can)."""
    if worker.timed_out:
        return f"timed out: the cell's {budget:.0f}s budget ran out in this subject"
    code = worker.code
    if code is not None and code < 0:
        return f"subject process killed by signal {-code}"
    if code not in (0, 1):
        return f"subject process exited with {code} ({PYTEST_CODES.get(code, 'unknown')})"
    if part is None:
        return "subject process wrote no results"
    counts = part.get("subjects", {}).get(worker.name)
    if not counts:
        return "subject process recorded no collection count"
    recorded = sum(1 for r in part.get("results", []) if r.get("subject") == worker.name)
    if recorded < counts["collected"]:
        return f"only {recorded} of {counts['collected']} collected checks recorded a result"
    if counts["collected"] == 0:
        return "no checks were collected for this subject"
    return ""


def _tail(worker: Any) -> str:
    lines = [line for line in worker.tail if not line.startswith(("[mlxcompat]", "."))]
    return " | ".join(lines[-4:])[-600:]


def merge_cell(opts: Any, parts: dict[str, tuple[Any, dict | None, dict | None]],
               capabilities: dict[str, Any] | None,
               started: float) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """(cell document, pytest-benchmark document of every subject's rounds or None)."""
    doc = empty_cell(opts.cell)
    doc["run_id"] = opts.run_id
    doc["started"], doc["finished"] = started, time.time()
    doc["inputs"] = opts.inputs
    bench_json: dict[str, Any] = {}
    for subject in opts.subjects:
        name = subject.name
        if name in opts.reused:
            old = opts.reused[name]
            for key in ("results", "patches", "bench"):
                doc[key] += [{**r, "reused": True} for r in old.get(key, [])]
            doc["subjects"][name] = {**old.get("subject", {}), "reused": True}
            doc["env"] = doc["env"] or old.get("env", {})
            continue
        if name not in parts:
            doc["subjects"][name] = {"collected": 0, "recorded": 0}
            doc["results"].append(error_row(
                "run", name, "never started: the cell's time budget ran out first"))
            continue
        worker, part, bench = parts[name]
        if part is not None:
            doc["env"] = doc["env"] or part.get("env", {})
            for key in ("results", "patches", "bench"):
                doc[key] += part.get(key, [])
        counts = dict((part or {}).get("subjects", {}).get(name, {}))
        counts["recorded"] = sum(1 for r in (part or {}).get("results", []))
        counts["returncode"] = worker.code
        doc["subjects"][name] = counts
        why = _why(worker, part, opts.timeout_s)
        if why:
            tail = _tail(worker)
            doc["results"].append(error_row("run", name, why + (f": {tail}" if tail else ""),
                                            returncode=worker.code))
        if bench:
            bench_json[name] = bench
    if capabilities is not None:
        doc["env"]["need"] = capabilities
    doc["env"]["run_inputs"] = {"jobs": opts.jobs}
    if opts.install:
        doc["install"] = opts.install
    _merge_sequential(doc["bench"])
    add_overhead(doc["bench"])
    doc["complete"] = True
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


def _merge_sequential(rows: list[dict[str, Any]]) -> None:
    """Fold `none`'s one-at-a-time rows into its throughput rows (the speedup's baseline)."""
    seq = {(r["model"], r["batch"], r.get("dtype", "float32")): r for r in rows
           if r.get("kind") == "sequential"}
    for r in rows:
        match = seq.get((r["model"], r["batch"], r.get("dtype", "float32")))
        if r.get("kind") is None and r["subject"] == "none" and match and "error" not in match:
            r["sequential_tok_s"] = match["sequential_tok_s"]["median"]
    rows[:] = [r for r in rows if r.get("kind") != "sequential" or "error" in r]
