"""Tidy rows from cell JSONs: cell × check × mode × model × subject -> verdict and outcome.

Expectations are re-derived from the current matrix.yaml, so a new known issue needs no
rerun. A result an expectation covers is `expected` only within that entry's bounds.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from packaging.version import InvalidVersion, Version

from mlxcompat.matrix import Matrix
from mlxcompat.report.load import split_name
from mlxcompat.results import VERDICTS

REPORT_SCHEMA = 2
RESULT_KEYS = ("check", "mode", "model", "subject")


def base_cell(name: str) -> str:
    """The matrix cell of a cell name; `<cell>@<label>` names the runner it ran on."""
    return split_name(name)[0]


def result_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["cell"], *(str(row.get(k, "")) for k in RESULT_KEYS))


def summary_line(doc: dict[str, Any]) -> str:
    counts = Counter(r["verdict"] for r in doc["results"])
    return f"{doc['cell']}: " + " ".join(f"{v}={counts.get(v, 0)}" for v in VERDICTS)


def packages_of(doc: dict[str, Any]) -> dict[str, str]:
    return {k: str(v) for k, v in (doc.get("env", {}).get("packages") or {}).items()}


def _pins(doc: dict[str, Any], matrix: Matrix | None) -> dict[str, str]:
    """A pinned cell's pins; a resolved cell's (and a stray's) from what it installed."""
    if matrix is not None:
        for cell in matrix.cells:
            if cell.id == base_cell(doc["cell"]) and cell.pins:
                return dict(cell.pins)
    packages = packages_of(doc)
    return {k: packages[k] for k in ("mlx-lm", "mlx", "mlx-vlm") if k in packages}


def cell_order(cell: dict[str, Any]) -> tuple[Any, ...]:
    """mlx-lm cells by mlx-lm version, then mlx-vlm cells by mlx-vlm version; labels last."""
    pins = cell["pins"]
    axis = "mlx-vlm" if "mlx-vlm" in pins else "mlx-lm"
    try:
        version: Any = Version(pins.get(axis, "0"))
    except InvalidVersion:
        version = Version("0")
    return (cell["label"], axis == "mlx-vlm", version, cell["cell"])


def outcome(row: dict[str, Any], matrix: Matrix | None, packages: dict[str, str],
            env: dict[str, Any]) -> None:
    """Fill expected / outcome / reason / link / why of a result row."""
    exp = matrix.expectation_for(row, row["cell"], packages, env) if matrix else None
    if exp is not None:
        holds, why = exp.holds(row)
        row.update(expected=exp.verdict, expectation=exp.index, reason=exp.reason,
                   link=exp.link, outcome="expected" if holds else "unexpected", why=why)
        return
    row.update(expected=None, expectation=None, reason="", link="", why="")
    if row["verdict"] in ("pass", "skip"):
        row["outcome"] = "expected"
    else:
        row["outcome"] = "unexpected"
        row["why"] = f"{row['verdict']} and no expectation covers it"


def _install_row(doc: dict[str, Any]) -> dict[str, Any] | None:
    install = doc.get("install") or {}
    if install.get("status", "ok") == "ok":
        return None
    tail = str(install.get("log_tail", "")).strip().splitlines()
    return {"check": "install", "mode": "", "model": "", "subject": "", "verdict": "error",
            "metrics": {}, "seconds": install.get("seconds") or 0.0,
            "detail": f"install failed: {tail[-1] if tail else install.get('error', '')}"}


def aggregate(docs: list[dict[str, Any]], matrix: Matrix | None) -> dict[str, Any]:
    """The compat.json document (without the load problems and baseline changes)."""
    cells, results, patches, bench = [], [], [], []
    for doc in docs:
        packages, env = packages_of(doc), doc.get("env", {})
        cell_name, label = split_name(doc["cell"])
        cells.append({"cell": doc["cell"], "base": cell_name, "label": label,
                      "pins": _pins(doc, matrix), "env": env,
                      "install": doc.get("install", {}), "subjects": doc.get("subjects", {}),
                      "run_id": doc.get("run_id", "")})
        for r in (_install_row(doc), *doc["results"]):
            if not r:
                continue
            verdict = r.get("verdict") if r.get("verdict") in VERDICTS else "error"
            row = {"cell": doc["cell"], "base": cell_name, "label": label,
                   "backend": env.get("backend", ""),
                   **{k: str(r.get(k, "")) for k in RESULT_KEYS}, "verdict": verdict,
                   "metrics": r.get("metrics") or {}, "detail": str(r.get("detail", "")),
                   "seconds": r.get("seconds", 0.0), "reused": bool(r.get("reused"))}
            outcome(row, matrix, packages, env)
            results.append(row)
        patches += [{"cell": doc["cell"], **p} for p in doc["patches"]]
        bench += [{"cell": doc["cell"], "fingerprint": env.get("fingerprint", {}), **b}
                  for b in doc["bench"]]
    cells.sort(key=cell_order)
    order = {c["cell"]: i for i, c in enumerate(cells)}
    results.sort(key=lambda r: (order[r["cell"]], *result_key(r)[1:]))
    counts = Counter(r["verdict"] for r in results)
    unexpected = [r for r in results if r["outcome"] == "unexpected"]
    expected_bad = [r for r in results if r["outcome"] == "expected"
                    and r["verdict"] in ("fail", "error")]
    return {
        "schema": REPORT_SCHEMA,
        "cells": cells,
        "results": results,
        "patches": patches,
        "bench": bench,
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "unexpected": len(unexpected),
        "expected_failures": len(expected_bad),
        "install_failed": [c["cell"] for c in cells if c["install"].get("status") == "failed"],
        "expectations": expectation_use(results, matrix),
    }


def expectation_use(results: list[dict[str, Any]], matrix: Matrix | None) -> list[dict]:
    """Every expectation with the rows it covered (a stale one covered none)."""
    if matrix is None:
        return []
    used = Counter(r["expectation"] for r in results if r.get("expectation") is not None)
    broken = Counter(r["expectation"] for r in results if r.get("expectation") is not None
                     and r["outcome"] == "unexpected")
    return [{"index": e.index, "label": e.label(), "verdict": e.verdict, "reason": e.reason,
             "link": e.link, "open": e.open, "covered": used.get(e.index, 0),
             "outside_bounds": broken.get(e.index, 0)} for e in matrix.expectations]
