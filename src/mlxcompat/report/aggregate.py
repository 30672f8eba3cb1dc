"""Tidy rows from cell JSONs: cell × check × mode × model × subject -> verdict and outcome.

Expectations are re-derived from the current matrix.yaml, so a new known issue needs no rerun.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from packaging.version import InvalidVersion, Version

from mlxcompat.matrix import Matrix
from mlxcompat.results import VERDICTS

REPORT_SCHEMA = 1
RESULT_KEYS = ("check", "mode", "model", "subject")


def base_cell(name: str) -> str:
    """The matrix cell of a cell name; `<cell>@<label>` names the runner it ran on."""
    return name.split("@", 1)[0]


def result_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (row["cell"], *(str(row.get(k, "")) for k in RESULT_KEYS))


def _pins(doc: dict[str, Any], matrix: Matrix | None) -> dict[str, str]:
    if matrix is not None:
        for cell in matrix.cells:
            if cell.id == base_cell(doc["cell"]):
                return dict(cell.pins)
    packages = doc.get("env", {}).get("packages", {})
    return {k: packages[k] for k in ("mlx-lm", "mlx", "mlx-vlm") if k in packages}


def cell_order(cell: dict[str, Any]) -> tuple[int, Any, str]:
    """mlx-lm cells by mlx-lm version, then mlx-vlm cells by mlx-vlm version."""
    pins = cell["pins"]
    axis = "mlx-vlm" if "mlx-vlm" in pins else "mlx-lm"
    try:
        version: Any = Version(pins.get(axis, "0"))
    except InvalidVersion:
        version = Version("0")
    return (axis == "mlx-vlm", version, cell["cell"])


def _outcome(row: dict[str, Any], matrix: Matrix | None, packages: dict[str, str]) -> None:
    exp = matrix.expectation_for(row, row["cell"], packages) if matrix else None
    if exp is not None:
        row.update(expected=exp.verdict, reason=exp.reason, link=exp.link)
        # A skip (not applicable here) never counts against an expectation of something else.
        same = row["verdict"] in (exp.verdict, "skip")
        row["outcome"] = "expected" if same else "unexpected"
    else:
        row.update(expected=None, reason="", link="")
        row["outcome"] = "expected" if row["verdict"] in ("pass", "skip") else "unexpected"


def _install_row(doc: dict[str, Any]) -> dict[str, Any] | None:
    install = doc.get("install") or {}
    if install.get("status", "ok") == "ok":
        return None
    tail = str(install.get("log_tail", "")).strip().splitlines()
    return {"cell": doc["cell"], "check": "install", "mode": "", "model": "", "subject": "",
            "verdict": "error", "metrics": {}, "seconds": install.get("seconds") or 0.0,
            "detail": f"install failed: {tail[-1] if tail else install.get('error', '')}"}


def aggregate(docs: list[dict[str, Any]], matrix: Matrix | None,
              problems: list[str] | None = None) -> dict[str, Any]:
    """The compat.json document."""
    cells, results, patches, bench = [], [], [], []
    for doc in docs:
        packages = {k: str(v) for k, v in (doc.get("env", {}).get("packages") or {}).items()}
        cells.append({"cell": doc["cell"], "pins": _pins(doc, matrix), "env": doc.get("env", {}),
                      "install": doc.get("install", {})})
        rows = [r for r in ([_install_row(doc), *list(doc["results"])]) if r]
        for r in rows:
            row = {"cell": doc["cell"], **{k: r.get(k, "") for k in RESULT_KEYS},
                   "verdict": r.get("verdict", "error") if r.get("verdict") in VERDICTS
                   else "error",
                   "metrics": r.get("metrics") or {}, "detail": str(r.get("detail", "")),
                   "seconds": r.get("seconds", 0.0)}
            _outcome(row, matrix, packages)
            results.append(row)
        patches += [{"cell": doc["cell"], **p} for p in doc["patches"]]
        bench += [{"cell": doc["cell"], **b} for b in doc["bench"]]
    cells.sort(key=cell_order)
    order = {c["cell"]: i for i, c in enumerate(cells)}
    results.sort(key=lambda r: (order[r["cell"]], *result_key(r)[1:]))
    counts = Counter(r["verdict"] for r in results)
    unexpected = [r for r in results if r["outcome"] == "unexpected"]
    return {
        "schema": REPORT_SCHEMA,
        "cells": cells,
        "results": results,
        "patches": patches,
        "bench": bench,
        "problems": list(problems or []),
        "counts": {v: counts.get(v, 0) for v in VERDICTS},
        "unexpected": len(unexpected),
        "install_failed": [c["cell"] for c in cells if c["install"].get("status") == "failed"],
    }
