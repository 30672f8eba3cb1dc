"""The words of the records, each with one meaning, and the one place a cell is named.

- verdict: what a check found (`pass` · `fail` · `error` · `skip`);
- observed: what the harness saw an entry point change (`applied` · `skipped` ·
  `not-applicable` · `error`); the entry point's own report is its `claim`;
- expected: a verdict within what matrix.yaml's expectations record (its `Outcome`);
- mode: how a batch is shaped (parity and shapes); GLM4V, cache-contract, prompt-cache and
  server rows have a `scenario` (GLM4V also a `path`), role checks a `role`, upstream-suite
  rows a `test`, dtype rows a `dtype` ("" is float32).
"""

from __future__ import annotations

from typing import Literal

SCHEMA = 3
Verdict = Literal["pass", "fail", "error", "skip"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "error", "skip")
BAD: tuple[Verdict, ...] = ("fail", "error")
Observed = Literal["applied", "skipped", "not-applicable", "error"]
OBSERVED: tuple[Observed, ...] = ("applied", "skipped", "not-applicable", "error")

# Whose fault a row is (report/fault.py says how each is read off the rows) and how bad.
Fault = Literal["upstream", "subject", "subject-worsened", "fixed-by-subject"]
FAULTS: tuple[Fault, ...] = ("upstream", "subject", "subject-worsened", "fixed-by-subject")
Severity = Literal["wrong-tokens", "drift", "crash", "cannot-run", "contract"]
SEVERITIES: tuple[Severity, ...] = ("wrong-tokens", "drift", "crash", "cannot-run", "contract")

# The subject with no patch: upstream behaviour, the reference every other subject is
# compared with (its process also hosts the need probe).
UPSTREAM = "none"
# The summary row of an upstream-suite run (its other rows name one upstream test each).
ALL_TESTS = "(all)"
# Row keys that identify what a result is about, beside cell and subject.
# `dtype` is "" for float32 (every row before dtypes were checked) and names any other.
KEYS: tuple[str, ...] = ("model", "mode", "role", "scenario", "path", "test", "dtype")
CASE_FIELDS: tuple[str, ...] = ("check", *KEYS)  # what identifies a case's row, subject aside


def case_key(item: object) -> tuple[str, ...]:
    """What identifies a case's row: its check and keys (a Case or a ResultRow)."""
    return tuple(str(getattr(item, k)) for k in CASE_FIELDS)


def cell_name(cell: str, label: str = "") -> str:
    """`<cell>@<label>`: a cell's results from a runner label other than the default."""
    return f"{cell}@{label}" if label else cell


def split_cell_name(name: str) -> tuple[str, str]:
    """`<cell>@<label>` -> (cell, label)."""
    cell, _, label = name.partition("@")
    return cell, label
