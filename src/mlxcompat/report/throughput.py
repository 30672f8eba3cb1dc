"""Throughput tables: one compact table per backend for the newest release (model × batch ->
tok/s per subject, speedup, overhead vs `none` with its interval), and every row for the
details. CPU and GPU figures are never put in one comparison."""

from __future__ import annotations

from typing import Any

from mlxcompat.report.aggregate import cell_order
from mlxcompat.report.tables import column_label, comparability


def _fmt_tok_s(gen: dict[str, Any]) -> str:
    if not gen.get("rounds"):
        return ""
    lo, hi = gen.get("ci95", [None, None])
    ci = f" ({lo:,.0f}–{hi:,.0f})" if lo is not None else ""
    return f"{gen['median']:,.0f}{ci}"


SHORT = {"bfloat16": "bf16", "float16": "fp16"}


def bench_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Throughput rows in cell order, with release, backend and a comparability note."""
    cells = {c["cell"]: c for c in report["cells"]}
    order = {name: i for i, name in enumerate(cells)}
    rows = []
    for b in sorted(report["bench"], key=lambda b: (order.get(b["cell"], 0), b.get("model", ""),
                                                     b.get("batch", 0), b.get("subject", ""))):
        cell = cells.get(b["cell"])
        if cell is None:
            continue
        env = cell["env"]
        gen = b.get("gen_tok_s") or {}
        overhead = b.get("overhead") or {}
        dtype = b.get("dtype", "float32")
        rows.append({**b, "release": column_label(cell),
                     "model": b.get("model", "") if dtype == "float32"
                     else f"{b.get('model', '')} ({SHORT.get(dtype, dtype)})",
                     "backend": b.get("backend") or env.get("backend", "cpu"),
                     "device": env.get("device_name", ""), "tok_s": _fmt_tok_s(gen),
                     "cv": gen.get("cv"), "overhead_text": overhead.get("text", ""),
                     "note": b.get("error") or b.get("skip") or comparability(env)})
    return rows


def by_backend(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault(row["backend"], []).append(row)
    return groups


def newest_cell(report: dict[str, Any], rows: list[dict[str, Any]]) -> str | None:
    """The newest pinned mlx-lm cell among `rows` (the compact table's release)."""
    cells = [c for c in report["cells"] if any(r["cell"] == c["cell"] for r in rows)
             and c["base"].startswith("mlx-lm-")]
    return max(cells, key=cell_order)["cell"] if cells else None


def compact(report: dict[str, Any], rows: list[dict[str, Any]]) -> tuple[str, list[str],
                                                                         list[list[str]]]:
    """(release, headers, rows) of the llama-bench-style table for one backend."""
    cell = newest_cell(report, rows)
    if cell is None:
        return "", [], []
    mine = [r for r in rows if r["cell"] == cell and r.get("gen_tok_s")]
    subjects = list(dict.fromkeys(r["subject"] for r in mine))
    headers = ["model", "batch", *(f"{s} tok/s" for s in subjects), "speedup (none)",
               *(f"{s} vs none" for s in subjects if s != "none")]
    body = []
    for key in dict.fromkeys((r["model"], r["batch"]) for r in mine):
        by_subject = {r["subject"]: r for r in mine if (r["model"], r["batch"]) == key}
        none = by_subject.get("none", {})
        speed = none.get("speedup")
        body.append([key[0], str(key[1]),
                     *(by_subject.get(s, {}).get("tok_s", "") for s in subjects),
                     f"{speed:.2f}×" if isinstance(speed, int | float) else "",
                     *(by_subject.get(s, {}).get("overhead_text", "") for s in subjects
                       if s != "none")])
    return rows[0]["release"] if not mine else mine[0]["release"], headers, body


def full_rows(rows: list[dict[str, Any]]) -> tuple[list[str], list[list[str]]]:
    headers = ["release", "model", "subject", "batch", "gen tok/s (median, 95% CI)", "CV",
               "rounds", "first/last round", "speedup", "vs none", "peak MB", "note"]
    body = []
    for b in rows:
        gen = b.get("gen_tok_s") or {}
        first = b.get("first_round_ratio")
        body.append([b["release"], b.get("model", ""), b.get("subject", ""),
                     str(b.get("batch", "")), b["tok_s"],
                     f"{b['cv']:.1%}" if isinstance(b.get("cv"), int | float) else "",
                     str(gen.get("rounds", "")),
                     f"{first:.2f}" if isinstance(first, int | float) else "",
                     f"{b['speedup']:.2f}×" if isinstance(b.get("speedup"), int | float) else "",
                     b["overhead_text"],
                     f"{b['peak_memory_mb']:.1f}" if isinstance(b.get("peak_memory_mb"),
                                                               int | float) else "",
                     str(b["note"] or "")])
    return headers, body
