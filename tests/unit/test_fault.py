"""Fault and severity, one test per class on real rows of the committed full run (re-judged
from the rows, the recorded fault cleared first), and on the rule's edges."""

from __future__ import annotations

from pathlib import Path

import pytest

from mlxcompat.records.report import Outcome, ReportRow, read_compat
from mlxcompat.report.fault import fault, judge_faults, severity

REPORT = Path(__file__).resolve().parents[2] / "reports" / "compat.json"


@pytest.fixture(scope="module")
def rows() -> list[ReportRow]:
    found = [r.model_copy(update={"fault": None, "severity": None})
             for r in read_compat(REPORT).results]
    judge_faults(found)
    return found


def _row(rows: list[ReportRow], cell: str, subject: str, **keys: str) -> ReportRow:
    return next(r for r in rows if r.cell == cell and r.subject == subject
                and all(getattr(r, k) == v for k, v in keys.items()))


@pytest.mark.parametrize(("cell", "subject", "keys", "want"), [
    ("mlx-lm-0.32.2", "none", {"check": "parity", "model": "mamba", "mode": "fresh"},
     ("upstream", "drift")),
    ("mlx-lm-0.30.6", "vllm-mlx-0.2.5", {"check": "parity", "model": "llama", "mode": "fresh"},
     ("subject", "cannot-run")),
    ("mlx-vlm-0.7.10", "vllm-mlx-0.6.0",
     {"check": "glm4v", "scenario": "filter", "path": "inner"}, ("subject-worsened",
                                                                 "wrong-tokens")),
    ("mlx-lm-0.32.2", "mlxcompat", {"check": "parity", "model": "mamba", "mode": "fresh"},
     ("fixed-by-subject", None)),
    ("mlx-lm-0.32.2", "vllm-mlx-0.6.0", {"check": "patch-status", "role": "mamba"},
     ("subject", "contract")),
])
def test_each_fault_class_on_a_real_row(rows, cell, subject, keys, want) -> None:
    row = _row(rows, cell, subject, **keys)
    assert (row.fault, row.severity) == want, row.detail


def test_every_row_upstream_passes_and_a_subject_fails_is_the_subjects(rows) -> None:
    upstream = {(r.cell, r.about): r for r in rows if r.subject == "none"}
    theirs = [r for r in rows if r.subject not in ("none", "") and r.verdict in ("fail", "error")
              and (u := upstream.get((r.cell, r.about))) is not None and u.verdict == "pass"]
    assert theirs and all(r.fault == "subject" for r in theirs)
    assert len(theirs) >= 700  # 744 in the run before the rename (issue 20)


def test_every_non_passing_row_has_a_fault_and_a_severity(rows) -> None:
    bad = [r for r in rows if r.verdict in ("fail", "error")]
    assert bad and all(r.fault and r.severity for r in bad)


def _made(verdict: str, subject: str = "s", tokens_equal: bool | None = True,
          detail: str = "", check: str = "parity") -> ReportRow:
    return ReportRow(check=check, subject=subject, verdict=verdict, model="m", mode="fresh",
                     tokens_equal=tokens_equal, detail=detail, cell="c",
                     outcome=Outcome(expected=True))


def test_edges_of_the_rule() -> None:
    crash, drifts = _made("error", "none"), _made("fail", "none")
    assert fault(_made("fail"), crash) == "subject-worsened"  # a crash became silent output
    assert fault(_made("fail", tokens_equal=False), drifts) == "subject-worsened"
    assert fault(_made("fail"), drifts) == "upstream"
    assert fault(_made("error"), drifts) == "subject"  # upstream runs, the subject raises
    own = _made("error", detail="X (raised in the subject's own code at s/m.py:3 in f)")
    assert fault(own, crash) == "subject"
    assert severity(_made("error", detail="not run: subject did not install")) == "cannot-run"
    assert severity(_made("fail", tokens_equal=None, check="idempotence")) == "contract"
