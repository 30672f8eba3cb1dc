"""The server-workload figures of cell JSONs: per subject, the `server` rows (requests served,
completions compared, mismatches with their cause, seconds) and the seconds of every new
check. `python scripts/server_figures.py reports/raw/mlx-lm-0.32.2.json [...]` (plain JSON or
.json.gz)."""

from __future__ import annotations

import gzip
import json
import sys
from collections import defaultdict
from pathlib import Path

NEW = ("server", "prompt-cache", "shapes", "dtype-parity", "dtype-cache", "process-state")


def _load(path: str) -> dict:
    raw = Path(path).read_bytes()
    return json.loads(gzip.decompress(raw) if path.endswith(".gz") else raw)


def _server(doc: dict) -> list[str]:
    lines = []
    by_subject: dict[str, list[dict]] = defaultdict(list)
    for row in doc["results"]:
        if row["check"] == "server":
            by_subject[row["subject"]].append(row)
    for subject, rows in by_subject.items():
        served = sum(r["metrics"].get("served", 0) for r in rows
                     if r["scenario"] == "cancel")  # the workload of each model, once
        compared = sum(r["metrics"].get("rows", 0) for r in rows)
        seconds = sum(r["seconds"] for r in rows)
        verdicts = defaultdict(int)
        for r in rows:
            verdicts[r["verdict"]] += 1
        counts = " ".join(f"{k}={v}" for k, v in sorted(verdicts.items()))
        lines.append(f"  {subject}: {len(rows)} rows ({counts}); {served} requests sent, "
                     f"completions compared {compared}; {seconds:.1f} s")
        for r in rows:
            if r["verdict"] not in ("pass", "skip"):
                delta = "" if r["delta"] is None else f" |Δ| {r['delta']:.3g}"
                lines.append(f"    {r['model']} {r['scenario']}: {r['verdict']}{delta} "
                             f"tokens_equal={r['tokens_equal']}: {r['detail'][:110]}")
    return lines


def _dtypes(doc: dict) -> list[str]:
    """Per subject and dtype: the largest |Δ| of dtype-parity per model, the modes that
    failed, whether tokens stayed equal; and dtype-cache verdicts."""
    found: dict[tuple[str, str, str], list[dict]] = defaultdict(list)
    for row in doc["results"]:
        if row["check"] in ("dtype-parity", "dtype-cache") and row["subject"] in SUBJECTS:
            found[(row["subject"], row["dtype"], row["model"])].append(row)
    lines = []
    for (subject, dtype, model), rows in sorted(found.items()):
        deltas = [r["delta"] for r in rows if r["delta"] is not None]
        bad = [r["mode"] or "cache" for r in rows if r["verdict"] != "pass"]
        tokens = all(r["tokens_equal"] is not False for r in rows)
        lines.append(f"  {subject} {dtype} {model}: max |Δ| {max(deltas, default=0):.3g}, "
                     f"not pass: {','.join(bad) or '-'}, tokens equal: {tokens}")
    return lines


SUBJECTS = ("none", "mlxcompat", "vllm-mlx-0.6.0")


def _seconds(doc: dict) -> str:
    total: dict[str, float] = defaultdict(float)
    for row in doc["results"]:
        total[row["check"] if row["check"] in NEW else "(the other checks)"] += row["seconds"]
    return ", ".join(f"{k} {v:.1f}" for k, v in sorted(total.items()))


def main(paths: list[str]) -> None:
    for path in paths:
        doc = _load(path)
        packages = doc["env"]["packages"]
        print(f"{doc['cell']} (mlx-lm {packages.get('mlx-lm')}, mlx {packages.get('mlx')})")
        print("  seconds of rows, all subjects: " + _seconds(doc))
        print("\n".join(_server(doc)) or "  no server rows")
        print("\n".join(_dtypes(doc)) or "  no dtype rows")


if __name__ == "__main__":
    main(sys.argv[1:])
