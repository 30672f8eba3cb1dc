"""Schema 2 -> 3: the fields renamed so that each word has one meaning.

Schema 2 used `mode` for a parity mode, a role (import / patch-status / idempotence), a GLM4V
`scenario/path`, cache-contract's scenario and an upstream test id; a patch row's `patch` was
its role and `status` its observed status; bench rows were told apart by which key they had.
"""

from __future__ import annotations

from typing import Any

from mlxcompat.records.names import SCHEMA

ROLE_CHECKS = ("import", "patch-status", "idempotence")


def result_v2(row: dict[str, Any]) -> dict[str, Any]:
    """One schema-2 result row as schema 3 (the report's extra keys are left to the caller)."""
    out = {k: v for k, v in row.items() if k not in ("mode", "expected", "returncode")}
    check, mode = row.get("check", ""), str(row.get("mode", ""))
    metrics = dict(row.get("metrics") or {})
    if "returncode" in row:
        metrics["returncode"] = row["returncode"]
    if check in ROLE_CHECKS:
        out["role"] = mode
    elif check == "glm4v" and "/" in mode:
        out["scenario"], out["path"] = mode.split("/", 1)
    elif check == "cache-contract":
        out["scenario"] = mode
    elif check == "upstream-suite":
        out["test"] = mode
    else:
        out["mode"] = mode
    if "max_abs_delta" in metrics:
        out["delta"] = metrics.pop("max_abs_delta")
    if "tokens_equal" in metrics:
        out["tokens_equal"] = metrics.pop("tokens_equal")
    out["metrics"] = metrics
    out.setdefault("dtype", "")  # every row before schema 3's dtypes was float32
    return out


def patch_v2(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in row.items() if k not in ("patch", "status", "idempotence")}
    out["role"], out["observed"] = row["patch"], row["status"]
    record = row.get("idempotence")
    if record is not None:
        record = {("unpatch_offered" if k == "unpatch" else k): v for k, v in record.items()}
    out["idempotence"] = record
    return out


def spread_v2(value: dict[str, Any] | None) -> dict[str, Any] | None:
    """`cv` and `robust_cv` became one `spread` (the robust one)."""
    if not isinstance(value, dict):
        return value
    out = {k: v for k, v in value.items() if k not in ("cv", "robust_cv")}
    if "robust_cv" in value:
        out["spread"] = value["robust_cv"]
    return out


def bench_v2(row: dict[str, Any]) -> dict[str, Any]:
    out = {k: (spread_v2(v) if k in ("gen_tok_s", "prefill_tok_s") else v)
           for k, v in row.items() if k not in ("kind", "gate", "skip", "error",
                                                "sequential_tok_s")}
    kind = row.get("kind")
    if "error" in row:
        return {**out, "kind": "failed", "what": kind or "throughput", "detail": row["error"]}
    if "skip" in row:
        return {**out, "kind": "skipped", "reason": row["skip"]}
    if kind == "sequential":
        return {**out, "kind": "sequential", "tok_s": spread_v2(row["sequential_tok_s"])}
    return {**out, "kind": "measured", "gating": bool(row.get("gate")),
            "sequential_tok_s": row.get("sequential_tok_s")}


def need_v2(record: dict[str, Any] | None) -> dict[str, Any] | None:
    if record is None:
        return None
    if "error" in record and not isinstance(record["error"], dict):
        return {"error": record["error"]}
    needs = {}
    for name, entry in record.items():
        needs[name] = {"needed": entry.get("needed"), "why": entry.get("why", ""),
                       "findings": entry.get("capabilities") or {}}
    return {"needs": needs}


def install_v2(record: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in record.items() if k not in ("status", "subjects", "inputs")}
    out["ok"] = record.get("status", "ok") == "ok"
    out["subjects"] = {name: {"ok": status == "ok",
                              "error": "" if status == "ok" else str(status)}
                       for name, status in (record.get("subjects") or {}).items()}
    return out


def env_v2(env: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in env.items() if k not in ("capabilities", "need", "run_inputs")}
    out["need"] = need_v2(env.get("need"))
    out["jobs"] = (env.get("run_inputs") or {}).get("jobs")
    return out


def cell_v2(doc: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 cell document as schema 3."""
    return {**doc, "schema": SCHEMA, "env": env_v2(doc.get("env") or {}),
            "install": install_v2(doc.get("install") or {}),
            "results": [result_v2(r) for r in doc.get("results", [])],
            "patches": [patch_v2(p) for p in doc.get("patches", [])],
            "bench": [bench_v2(b) for b in doc.get("bench", [])]}


def report_row_v2(row: dict[str, Any]) -> dict[str, Any]:
    """A schema-2 compat.json result row as schema 3 (a baseline from before the rename)."""
    placed = ("cell", "base", "label", "backend")
    judged = ("expected", "expectation", "reason", "link", "outcome", "why")
    out = result_v2({k: v for k, v in row.items() if k not in placed + judged})
    out.update({k: row.get(k, "") for k in placed})
    out["outcome"] = {"expected": row.get("outcome", "expected") == "expected",
                      "expectation": row.get("expectation"), "reason": row.get("reason", ""),
                      "link": row.get("link", ""), "why": row.get("why", "")}
    return out
