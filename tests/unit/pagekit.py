"""A report big enough to test the HTML page's geometry: five cells (three pinned mlx-lm
releases, `latest` and an as-installed cell whose mlx-lm equals a pinned one), a subject with a
long name (wide sticky labels), a tall parity table, a folded cache-contract table, twelve
cited expectations (so `#note-10` exists), throughput rows on every cell and a wide API-drift
table. Everything expected: the page is built as a passing report is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from cellkit import cell, matrix, result, write

from mlxcompat.matrix import parse_matrix
from mlxcompat.records.names import SCHEMA
from mlxcompat.registry import PARITY_MODES
from mlxcompat.report.build import ReportPaths, build_report

LONG = "vllm-mlx-0.6.0-forced"  # as long as the real report's longest subject
SUBJECTS = ("none", "mlxcompat", LONG)
MODELS = ("llama", "mamba", "mamba2", "qwen3_next", "qwen3_5")
HISTORY = [m for m in PARITY_MODES if m.startswith("history")]
PINNED = {"mlx-lm-0.29.1": "0.29.1", "mlx-lm-0.31.3": "0.31.3", "mlx-lm-0.32.2": "0.32.2"}
RESOLVED = {"latest": "0.32.2", f"as-installed-{LONG}": "0.31.3"}


def _expectations() -> list[dict[str, Any]]:
    wrong = {"verdict": "fail", "max_delta": 3.0, "tokens_equal": False}
    found: list[dict[str, Any]] = [
        {"match": {"check": "parity", "model": "mamba"}, "verdict": "fail", "max_delta": 0.05,
         "tokens_equal": True, "reason": "Mamba v1 ignores padding masks", "open": True,
         "link": "https://example.org/mamba"},
        {"match": {"check": ["parity", "cache-contract"], "model": "mamba2", "subject": "none",
                   "mlx-lm": "<0.30.4"}, "verdict": "error", "error": "AttributeError: .*extract",
         "reason": "no ArraysCache.extract before 0.30.4"}]
    found += [{"match": {"check": "parity", "model": "qwen3_next", "mode": mode,
                         "subject": "none", "mlx-lm": "<0.32.0"}, **wrong,
               "reason": f"qwen3_next {mode} loses the history state (fixed in 0.32.0)"}
              for mode in HISTORY]
    found += [{"match": {"check": "parity", "model": "qwen3_5", "mode": mode, "subject": LONG},
               **wrong, "open": True, "link": f"https://example.org/{mode}",
               "reason": f"the subject's qwen3_5 {mode} path returns other tokens"}
              for mode in HISTORY]
    return found


def page_matrix() -> dict[str, Any]:
    return matrix(
        subjects={"none": {}, "mlxcompat": {"entry_points": {
            "mamba": "mlxcompat.patches.mamba_cache:ensure_mamba_support"}},
            LONG: {"install": [f"{LONG}==1.0"]}},
        cells=[*({"mlx-lm": v, "mlx": "0.29.2", "subjects": list(SUBJECTS),
                  "models": list(MODELS)} for v in PINNED.values()),
               {"resolve": "latest", "subjects": list(SUBJECTS), "models": list(MODELS)},
               {"resolve": LONG, "subjects": list(SUBJECTS), "models": list(MODELS)}],
        expectations=_expectations())


def _verdict(model: str, mode: str, subject: str, lm: str) -> tuple[str, float | None, Any]:
    if model == "mamba":
        return "fail", 0.019, True
    if model == "mamba2" and subject == "none" and lm < "0.30.4":
        return "error", None, None
    if model == "qwen3_next" and mode in HISTORY and subject == "none" and lm < "0.32.0":
        return "fail", 2.5, False
    if model == "qwen3_5" and mode in HISTORY and subject == LONG:
        return "fail", 2.5, False
    return "pass", 0.0, True


def _bench(subject: str, lm: str) -> list[dict[str, Any]]:
    speed = {"0.29.1": 80.0, "0.31.3": 95.0, "0.32.2": 100.0}[lm]
    return [{"kind": "measured", "model": model, "subject": subject, "batch": batch,
             "backend": "cpu", "profile": "quick",
             "gen_tok_s": {"rounds": 3, "median": speed * batch * (1 + i / 10),
                           "ci95": [speed * batch * 0.9, speed * batch * 1.1]},
             "prefill_tok_s": {"rounds": 3, "median": 500.0},
             "speedup": batch * 0.7 if subject == "none" else None}
            for i, model in enumerate(("llama", "mamba2")) for batch in (1, 4, 8)]


def page_cells() -> dict[str, dict[str, Any]]:
    docs = {}
    for name, lm in {**PINNED, **RESOLVED}.items():
        rows = [_row("parity", model, mode, subject, lm)
                for subject in SUBJECTS for model in MODELS for mode in PARITY_MODES]
        rows += [_row("cache-contract", model, "", subject, lm)
                 for subject in SUBJECTS for model in ("mamba2", "qwen3_next")]
        doc = cell(name, lm, rows, pad=True, matrix_doc=page_matrix(),
                   bench=[b for s in ("none", "mlxcompat") for b in _bench(s, lm)])
        if name in RESOLVED:
            doc["env"]["packages"]["mlx"] = "0.32.4"
        docs[name] = doc
    return docs


def _row(check: str, model: str, mode: str, subject: str, lm: str) -> dict[str, Any]:
    verdict, delta, tokens = _verdict(model, mode, subject, lm)
    return result(check, verdict, model, mode, subject, delta, tokens)


def drift_doc() -> dict[str, Any]:
    """A scan whose mlx-lm table is about as wide as the real one (3,000+ px)."""
    attrs = [f"BatchGenerator attribute number {i}" for i in range(24)]
    rows = [{"cell": name, "pins": {"mlx-lm": lm, "mlx": "0.29.2"}, "seconds": 0.01,
             "lm": {a: f"keywords max_tokens stop_tokens sampler {lm}" for a in attrs}}
            for name, lm in PINNED.items()]
    return {"schema": SCHEMA, "rows": rows, "requires": {LONG: {"mlx-lm": ">=0.31.3,<0.32"}}}


def build_page(folder: Path) -> Path:
    """compat.html of this report, built as `mlxcompat report` builds it."""
    raw = write(folder / "raw", page_cells())
    (folder / "drift.json").write_text(json.dumps(drift_doc()))
    build_report(ReportPaths.under(raw), parse_matrix(page_matrix()))
    return folder / "compat.html"
