"""Changes since the last accepted report: new failures, new passes, throughput moves."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlxcompat.report.aggregate import result_key

_BAD = ("fail", "error")


def load_baseline(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The baseline document, or None with a problem line (a missing one is no problem)."""
    if not path.exists():
        return None, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return None, f"{path.name}: unreadable baseline ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        return None, f"{path.name}: not a compat.json document; ignored"
    return doc, None


def _bench_key(row: dict[str, Any]) -> tuple[Any, ...]:
    return (row.get("cell"), row.get("model"), row.get("subject"), row.get("batch"),
            row.get("label", ""))


def _tok_s(row: dict[str, Any]) -> float | None:
    value = (row.get("gen_tok_s") or {}).get("mean")
    return float(value) if isinstance(value, int | float) and value > 0 else None


def diff(current: dict[str, Any], baseline: dict[str, Any] | None,
         threshold: float) -> dict[str, Any]:
    """What changed against `baseline`; empty lists when there is none."""
    changes: dict[str, Any] = {"baseline": baseline is not None, "new_failures": [],
                               "new_passes": [], "throughput": [], "threshold": threshold}
    if baseline is None:
        return changes
    before = {result_key(r): r for r in baseline["results"]}
    for row in current["results"]:
        old = before.get(result_key(row))
        if old is None:
            continue
        if row["verdict"] in _BAD and old.get("verdict") not in _BAD:
            changes["new_failures"].append({**_ident(row), "was": old.get("verdict")})
        elif row["verdict"] == "pass" and old.get("verdict") in _BAD:
            changes["new_passes"].append({**_ident(row), "was": old.get("verdict")})
    old_bench = {_bench_key(b): b for b in baseline.get("bench", [])}
    for row in current.get("bench", []):
        old = old_bench.get(_bench_key(row))
        now, then = _tok_s(row), _tok_s(old) if old else None
        if now is None or then is None:
            continue
        change = now / then - 1.0
        if abs(change) > threshold:
            changes["throughput"].append({
                "cell": row["cell"], "model": row.get("model"), "subject": row.get("subject"),
                "batch": row.get("batch"), "label": row.get("label", ""),
                "before": then, "after": now, "change": change})
    return changes


def _ident(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("cell", "check", "mode", "model", "subject", "verdict", "outcome", "detail")
    return {k: row.get(k) for k in keys}


def regressions(changes: dict[str, Any]) -> list[str]:
    """One line per change that should fail CI: new unexpected failures, throughput drops."""
    lines = [f"new failure: {c['cell']} {c['check']} {c['model']} {c['mode']} {c['subject']} "
             f"({c['was']} -> {c['verdict']})"
             for c in changes["new_failures"] if c["outcome"] == "unexpected"]
    lines += [f"throughput: {t['cell']} {t['model']} batch {t['batch']} {t['subject']} "
              f"{t['before']:.1f} -> {t['after']:.1f} tok/s ({t['change']:+.0%})"
              for t in changes["throughput"] if t["change"] < 0]
    return lines
