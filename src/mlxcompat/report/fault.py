"""Whose fault and how bad: read off the rows themselves, never off the notes.

Every row of a subject is compared with `none`'s row of the same cell and check (upstream
behaviour, measured in the same cell):

- fault `upstream`: upstream fails the same check the same way (or it is `none`'s own row);
- `subject`: upstream passes (or skips, or has no such row) and the subject fails, the
  subject cannot run at all, or the error was raised in the subject's own code;
- `subject-worsened`: upstream fails, and the subject makes it worse: upstream raises and the
  subject silently gives other output, or upstream keeps its tokens and the subject does not;
- `fixed-by-subject`: upstream fails and the subject passes (a pass row; no severity).

Severity of a row that does not pass: `wrong-tokens` (greedy tokens differ, or a score is not
finite) · `drift` (tokens equal, |Δ| beyond the tolerance) · `crash` (raised) · `cannot-run`
(did not install, import or apply: its checks were not run) · `contract` (a patch contract:
patch status, idempotence, an upstream test whose outcome changed).
"""

from __future__ import annotations

from mlxcompat.records.names import BAD, UPSTREAM, Fault, Severity
from mlxcompat.records.report import ReportRow
from mlxcompat.records.rows import About

SUBJECT_ONLY = ("install", "import", "run")  # a subject's own rows: nothing upstream to compare
NOT_RUN = "not run:"
OWN_CODE = "raised in the subject's own code"


def severity(row: ReportRow) -> Severity | None:
    if row.verdict not in BAD:
        return None
    if row.verdict == "error":
        return "cannot-run" if row.check in SUBJECT_ONLY or row.detail.startswith(NOT_RUN) \
            else "crash"
    if row.tokens_equal is None:
        return "contract"
    non_finite = bool(row.metrics.get("non_finite_rows"))
    return "wrong-tokens" if non_finite or not row.tokens_equal else "drift"


def fault(row: ReportRow, upstream: ReportRow | None) -> Fault | None:
    """The fault of `row` given upstream's row of the same cell and check (None: no fault,
    the row passes and upstream's does too)."""
    bad = row.verdict in BAD
    if row.subject in (UPSTREAM, ""):
        return "upstream" if bad else None
    if not bad:
        return "fixed-by-subject" if upstream is not None and upstream.verdict in BAD else None
    if upstream is None or upstream.verdict not in BAD or row.check in SUBJECT_ONLY:
        return "subject"
    if row.detail.startswith(NOT_RUN) or OWN_CODE in row.detail:
        return "subject"
    if upstream.verdict == "error":
        return "subject-worsened" if row.verdict == "fail" else "upstream"
    if row.verdict == "error":
        return "subject"  # upstream runs (and drifts); the subject's path raises
    if upstream.tokens_equal and row.tokens_equal is False:
        return "subject-worsened"
    return "upstream"


def judge_faults(rows: list[ReportRow]) -> None:
    """Fill `fault` and `severity` of every row (in place)."""
    upstream: dict[tuple[str, About], ReportRow] = {
        (r.cell, r.about): r for r in rows if r.subject == UPSTREAM}
    for row in rows:
        row.severity = severity(row)
        row.fault = fault(row, upstream.get((row.cell, row.about)))
