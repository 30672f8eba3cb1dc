"""Changes since the accepted report (reports/baseline.json).

Results are compared per (cell, backend, runner label), so CI artifacts compare with a CI
baseline and a local run with a local one. A regression is any row that got worse: it
vanished, went pass -> skip / fail / error (expected or not), or changed from one failure
to another (fail <-> error, or another exception type). Throughput is compared only between
runs of a gating profile on the same machine fingerprint, and flagged only when the change
is statistically significant and beyond `throughput_threshold`; elsewhere it is reported,
never gated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mlxcompat.bench import unpaired_change

_BAD = ("fail", "error")


def load_baseline(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """The baseline document, or None with a problem line (a missing one is no problem)."""
    if not path.exists():
        return None, None
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        return None, f"{path.name}: unreadable baseline ({type(exc).__name__}: {exc})"
    if not isinstance(doc, dict) or doc.get("schema") != 2 or not isinstance(
            doc.get("results"), list):
        return None, f"{path.name}: not a schema-2 compat.json; accept a new one (--accept)"
    return doc, None


def cell_key(row: dict[str, Any]) -> tuple[str, str, str]:
    return (row.get("base", ""), row.get("backend", ""), row.get("label", ""))


def row_key(row: dict[str, Any]) -> tuple[str, ...]:
    return (*cell_key(row), *(str(row.get(k, "")) for k in ("check", "mode", "model",
                                                             "subject")))


def _error_type(row: dict[str, Any]) -> str:
    return str(row.get("detail", "")).split(":", 1)[0].strip()


def _worse(old: dict[str, Any], new: dict[str, Any]) -> str:
    """Why `new` is a regression against `old` ('' when it is not)."""
    was, now = old.get("verdict"), new["verdict"]
    if was == "pass" and now != "pass":
        kind = new.get("outcome", "")
        return f"pass -> {now}" + (f" ({kind})" if now in _BAD else "")
    if was in _BAD and now in _BAD:
        if was != now:
            return f"{was} -> {now}"
        if now == "error" and _error_type(old) != _error_type(new):
            return f"error changed: {_error_type(old)} -> {_error_type(new)}"
    if was == "skip" and now in _BAD:
        return f"skip -> {now}"
    return ""


def _ident(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("cell", "check", "mode", "model", "subject", "verdict", "outcome", "detail")
    return {k: row.get(k) for k in keys}


def diff(current: dict[str, Any], baseline: dict[str, Any] | None,
         threshold: float) -> dict[str, Any]:
    """What changed against `baseline`, for the cells present in both."""
    cells_now = {cell_key({**c, "backend": c["env"].get("backend", "")}): c["cell"]
                 for c in current["cells"]}
    changes: dict[str, Any] = {"baseline": baseline is not None, "regressions": [],
                               "new_passes": [], "new_rows": 0, "throughput": [],
                               "threshold": threshold, "no_baseline": []}
    old_rows = {row_key(r): r for r in (baseline or {}).get("results", [])}
    old_cells = {cell_key(r) for r in old_rows.values()}
    changes["no_baseline"] = sorted(name for key, name in cells_now.items()
                                    if key not in old_cells)
    now_rows = {row_key(r): r for r in current["results"]}
    for key, old in old_rows.items():
        if key[:3] not in cells_now:
            continue
        new = now_rows.get(key)
        if new is None:
            changes["regressions"].append({**_ident(old), "change": "vanished",
                                           "cell": cells_now[key[:3]]})
            continue
        why = _worse(old, new)
        if why:
            changes["regressions"].append({**_ident(new), "change": why})
        elif old.get("verdict") in _BAD and new["verdict"] == "pass":
            changes["new_passes"].append({**_ident(new), "change": f"{old['verdict']} -> pass"})
    changes["new_rows"] = sum(1 for k in now_rows if k[:3] in old_cells and k not in old_rows)
    changes["throughput"] = _throughput(current, baseline or {}, threshold)
    return changes


def _bench_key(row: dict[str, Any]) -> tuple[Any, ...]:
    fingerprint = json.dumps(row.get("fingerprint") or {}, sort_keys=True)
    return (row.get("cell"), row.get("model"), row.get("subject"), row.get("batch"),
            row.get("dtype", "float32"), row.get("profile"), fingerprint)


def _throughput(current: dict[str, Any], baseline: dict[str, Any],
                threshold: float) -> list[dict[str, Any]]:
    old = {_bench_key(b): b for b in baseline.get("bench", []) if b.get("gate")}
    moves = []
    for row in current.get("bench", []):
        if not row.get("gate") or not row.get("fingerprint"):
            continue
        then = old.get(_bench_key(row))
        now_values = (row.get("gen_tok_s") or {}).get("values") or []
        then_values = ((then or {}).get("gen_tok_s") or {}).get("values") or []
        change = unpaired_change(now_values, then_values)
        if change is None or not change["significant"] or abs(change["ratio"] - 1) <= threshold:
            continue
        moves.append({"cell": row["cell"], "model": row.get("model"),
                      "subject": row.get("subject"), "batch": row.get("batch"),
                      "before": (then or {}).get("gen_tok_s", {}).get("median"),
                      "after": row["gen_tok_s"].get("median"), "change": change["ratio"] - 1,
                      "ci95": [c - 1 for c in change["ci95"]]})
    return moves


def regressions(changes: dict[str, Any]) -> list[str]:
    """One line per change that fails the run unless accepted."""
    lines = [f"{c['cell']} {c['check']} {c['model']} {c['mode']} {c['subject']}: {c['change']}"
             for c in changes["regressions"]]
    lines += [f"throughput: {t['cell']} {t['model']} batch {t['batch']} {t['subject']} "
              f"{t['before']:.1f} -> {t['after']:.1f} tok/s ({t['change']:+.0%}, 95% CI "
              f"{t['ci95'][0]:+.0%}…{t['ci95'][1]:+.0%})"
              for t in changes["throughput"] if t["change"] < 0]
    return lines
