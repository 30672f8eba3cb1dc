"""Build cell JSONs and matrices for the report tests (schema 3), without running anything."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from mlxcompat.matrix import parse_matrix
from mlxcompat.records.names import SCHEMA
from mlxcompat.report.build import ReportPaths, build_report

MATRIX: dict[str, Any] = {
    "schema": 3,
    "backends": {"cpu": {"device": "cpu",
                         "requirement": {"linux": "mlx[cpu]=={v}", "darwin": "mlx=={v}"}}},
    "subjects": {"none": {}, "mlxcompat": {"entry_points": {
        "mamba": "mlxcompat.patches.mamba_cache:ensure_mamba_support"}}},
    # What standard_cells() covers: a cell must have rows for each subject and model it lists.
    "cells": [{"mlx-lm": "0.29.1", "mlx": "0.29.2", "subjects": ["none"],
               "models": ["llama", "mamba", "mamba2"]},
              {"mlx-lm": "0.32.2", "mlx": "0.32.2", "subjects": ["none", "mlxcompat"],
               "models": ["llama", "mamba", "mamba2", "qwen3_5"]}],
    "expectations": [
        {"match": {"check": "parity", "model": "mamba", "mode": ["fresh"],
                   "subject": ["none", "mlxcompat"]},
         "verdict": "fail", "max_delta": 0.05, "tokens_equal": True,
         "reason": "Mamba v1 ignores padding masks", "open": True,
         "link": "https://example.org/issue"},
        {"match": {"check": "parity", "model": "mamba2", "subject": "none", "mlx-lm": "<0.30.4"},
         "verdict": "error", "error": "AttributeError: .*extract",
         "reason": "no ArraysCache.extract before 0.30.4"},
    ],
}


def result(check: str, verdict: str, model: str = "", mode: str = "", subject: str = "none",
           max_abs_delta: float | None = None, tokens_equal: bool | None = None,
           **keys: Any) -> dict[str, Any]:
    """A schema-3 result row; `keys` sets role / scenario / path / test."""
    detail = {"pass": "max |Δ| 0.00e+00 <= 1e-04", "fail": "max |Δ| 1.90e-02 > 1e-04",
              "error": "AttributeError: 'MambaCache' object has no attribute 'extract'",
              "skip": "not here"}[verdict]
    return {"check": check, "verdict": verdict, "mode": mode, "model": model, "subject": subject,
            "delta": max_abs_delta, "tokens_equal": tokens_equal, "detail": detail,
            "seconds": 0.1, **keys}


def padded(name: str, mlx_lm: str, results: list[dict[str, Any]],
           matrix_doc: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """`results` plus a row for every other case the catalog lists for this cell of
    `matrix_doc` (the report fails a cell that lacks one, as a real run never does): the
    outcome the matrix expects for it, `pass` where it expects nothing."""
    from mlxcompat.matrix import parse_matrix
    from mlxcompat.records.names import KEYS, split_cell_name
    from mlxcompat.records.rows import ResultRow
    from mlxcompat.report.coverage import case_key, expected_cases

    parsed = parse_matrix(matrix_doc or MATRIX)
    cell_id, label = split_cell_name(name)
    if cell_id not in {c.id for c in parsed.cells}:
        return results
    have = {(r["subject"], *case_key(ResultRow(**r))) for r in results}
    rows = list(results)
    for subject, cases in expected_cases(parsed, cell_id, label).items():
        for case in cases:
            if (subject, *case_key(case)) in have:
                continue
            keys = {k: getattr(case, k) for k in KEYS}
            row = ResultRow(check=case.check, subject=subject, verdict="pass", **keys)
            known = parsed.expectation_for(row, cell_id, {"mlx-lm": mlx_lm})
            verdict = known.verdict if known else "pass"
            delta = (known.max_delta or 0.0) / 2 if known and verdict == "fail" else None
            rows.append(result(case.check, verdict, subject=subject, max_abs_delta=delta,
                               tokens_equal=known.tokens_equal if known else None, **keys))
    return rows


def cell(name: str, mlx_lm: str, results: list[dict[str, Any]], pad: bool = False,
         matrix_doc: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A finished cell's JSON; `pad`: with a row for every other case of the cell in
    `matrix_doc` (default MATRIX), as `padded` gives them."""
    results = padded(name, mlx_lm, results, matrix_doc) if pad else results
    subjects = sorted({r["subject"] for r in results})
    doc = {"schema": SCHEMA, "cell": name, "complete": True, "run_id": "r1",
           "env": {"backend": "cpu", "device_name": "cpu",
                   "packages": {"mlx-lm": mlx_lm, "mlx": "0.32.2"},
                   "fingerprint": {"cpu": "test", "cores": 2, "backend": "cpu"}},
           "install": {"ok": True, "seconds": 1.5, "log_tail": ""},
           "subjects": {s: {"collected": sum(r["subject"] == s for r in results)}
                        for s in subjects},
           "results": results, "patches": [], "bench": []}
    doc.update(extra)
    return doc


def standard_cells() -> dict[str, dict[str, Any]]:
    old = cell("mlx-lm-0.29.1", "0.29.1", [
        result("parity", "pass", "llama", "fresh"),
        result("parity", "error", "mamba2", "fresh"),
        result("parity", "fail", "mamba", "fresh", max_abs_delta=0.019, tokens_equal=True),
    ], pad=True)
    new = cell("mlx-lm-0.32.2", "0.32.2", [
        result("parity", "pass", "llama", "fresh"),
        result("parity", "pass", "mamba2", "fresh"),
        result("parity", "fail", "mamba", "fresh", "mlxcompat", max_abs_delta=0.019,
               tokens_equal=True),
        result("parity", "skip", "qwen3_5", "fresh"),
    ], pad=True)
    return {"mlx-lm-0.29.1": old, "mlx-lm-0.32.2": new}


def write(raw: Path, docs: dict[str, dict[str, Any]]) -> Path:
    raw.mkdir(parents=True, exist_ok=True)
    for name, doc in docs.items():
        (raw / f"{name}.json").write_text(json.dumps(doc))
    return raw


def matrix(**changes: Any) -> dict[str, Any]:
    doc = copy.deepcopy(MATRIX)
    doc.update(changes)
    return doc


def build(raw: Path, doc: dict[str, Any] | None = None, **kw: Any) -> tuple[int, str, Path]:
    """The report of the cell JSONs in `raw` (no HTML): its exit code, its line, its folder."""
    paths = ReportPaths.under(raw)
    code, line = build_report(paths, parse_matrix(doc or matrix()), html=False, **kw)
    return code, line, paths.out
