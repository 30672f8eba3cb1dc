"""Changes since the accepted report (reports/baseline.json).

Results are compared per (cell, backend, runner label), so CI artifacts compare with a CI
baseline and a local run with a local one. A regression is any row that got worse: it
vanished, went pass -> skip / fail / error (expected or not), or changed from one failure
to another (fail <-> error, or another exception type). Throughput is compared only between
runs of a gating profile on the same machine fingerprint, and flagged only when the change
lies beyond `throughput_threshold` with 95% confidence (`beyond`): a subject's overhead against
`none` (paired within each run) always, decode tok/s only where neither run was measured
beside another job; a row neither can judge fails as ungated. Elsewhere throughput is
reported, never gated. A baseline of schema 2 is read with its rows migrated.
"""

from __future__ import annotations

from pathlib import Path

from mlxcompat.bench import unpaired_change
from mlxcompat.records.base import RecordError
from mlxcompat.records.bench import MeasuredBench, PairedRatio
from mlxcompat.records.names import BAD, KEYS
from mlxcompat.records.report import (
    Change,
    Changes,
    CompatDoc,
    ReportBench,
    ReportRow,
    ThroughputMove,
    Ungated,
    read_compat,
)

CellKey = tuple[str, str, str]


def load_baseline(path: Path) -> tuple[CompatDoc | None, str | None]:
    """The baseline document, or None with a problem line (a missing one is no problem)."""
    if not path.exists():
        return None, None
    try:
        return read_compat(path), None
    except RecordError as exc:
        return None, f"unreadable baseline: {exc}"


def cell_key(base: str, backend: str, label: str) -> CellKey:
    return (base, backend, label)


def row_key(row: ReportRow) -> tuple[str, ...]:
    return (*cell_key(row.base, row.backend, row.label), *row.key())


def _error_type(row: ReportRow) -> str:
    return row.detail.split(":", 1)[0].strip()


def _worse(old: ReportRow, new: ReportRow) -> str:
    """Why `new` is a regression against `old` ('' when it is not)."""
    was, now = old.verdict, new.verdict
    if was == "pass" and now != "pass":
        kind = "expected" if new.outcome.expected else "unexpected"
        return f"pass -> {now}" + (f" ({kind})" if now in BAD else "")
    if was in BAD and now in BAD:
        if was != now:
            return f"{was} -> {now}"
        if now == "error" and _error_type(old) != _error_type(new):
            return f"error changed: {_error_type(old)} -> {_error_type(new)}"
    if was == "skip" and now in BAD:
        return f"skip -> {now}"
    return ""


def _change(row: ReportRow, change: str, cell: str | None = None) -> Change:
    return Change(cell=cell or row.cell, base=row.base, label=row.label, backend=row.backend,
                  check=row.check, subject=row.subject, verdict=row.verdict,
                  expected=row.outcome.expected, fault=row.fault, severity=row.severity,
                  detail=row.detail, change=change,
                  **{k: getattr(row, k) for k in KEYS})


def run_ids(doc: CompatDoc) -> set[str]:
    return {c.run_id for c in doc.cells if c.run_id}


def diff(current: CompatDoc, baseline: CompatDoc | None, threshold: float) -> Changes:
    """What changed against `baseline`, for the cells present in both."""
    cells_now: dict[tuple[str, ...], str] = {cell_key(c.base, c.env.backend, c.label): c.cell
                                            for c in current.cells}
    changes = Changes(baseline=baseline is not None, threshold=threshold,
                      same_run=baseline is not None and run_ids(baseline) == run_ids(current))
    old_rows = {row_key(r): r for r in (baseline.results if baseline else [])}
    old_cells = {k[:3] for k in old_rows}
    changes.no_baseline = sorted(name for key, name in cells_now.items()
                                 if key not in old_cells)
    now_rows = {row_key(r): r for r in current.results}
    for key, old in old_rows.items():
        if key[:3] not in cells_now:
            continue
        new = now_rows.get(key)
        if new is None:
            changes.regressions.append(_change(old, "vanished", cells_now[key[:3]]))
            continue
        why = _worse(old, new)
        if why:
            changes.regressions.append(_change(new, why))
        elif old.verdict in BAD and new.verdict == "pass":
            changes.new_passes.append(_change(new, f"{old.verdict} -> pass"))
    changes.new_rows = sum(1 for k in now_rows if k[:3] in old_cells and k not in old_rows)
    changes.throughput, changes.ungated = _throughput(current, baseline, threshold)
    return changes


def _bench_key(b: ReportBench) -> tuple[object, ...]:
    r = b.row
    return (b.cell, r.model, r.subject, r.batch, r.dtype, r.profile,
            b.fingerprint.model_dump_json())


def _gating(rows: list[ReportBench]) -> list[tuple[ReportBench, MeasuredBench]]:
    return [(b, b.row) for b in rows if isinstance(b.row, MeasuredBench) and b.row.gating]


def _noisy(row: MeasuredBench) -> str:
    return row.calibration.why if row.calibration and row.calibration.noisy else ""


def _speed_moved(row: MeasuredBench, then: MeasuredBench, threshold: float) -> str:
    """Why absolute tok/s cannot be compared although nothing else ran: the machine itself
    got faster or slower (a VM's host), read off the fixed loop both rows timed."""
    now_s, then_s = (r.calibration.seconds.median if r.calibration and r.calibration.seconds
                     else None for r in (row, then))
    if not now_s or not then_s or abs(now_s / then_s - 1) <= threshold:
        return ""
    return (f"the machine's own speed moved: a fixed loop took {now_s * 1000:.2f} ms, "
            f"{then_s * 1000:.2f} ms in the baseline")


def beyond(change: tuple[float, list[float], bool], threshold: float) -> bool:
    """A change is flagged when its whole 95% interval lies beyond the threshold, not when it
    is merely significant with a median beyond it: runs of one machine wander by more than
    each run's rounds show, so one run's interval understates the change's (DESIGN, "The
    gate"; scripts/gate_rule_aa.py)."""
    lo, hi = change[1]
    return hi < 1 - threshold or lo > 1 + threshold


def _overhead_change(now: PairedRatio, then: PairedRatio) -> tuple[float, list[float], bool]:
    """(now/then, its 95% interval, significant). With both runs' per-round ratios each run's
    own spread counts (a noisy baseline ratio is no fixed point); a baseline without them is
    taken as exact, as before they were kept."""
    if len(now.ratios) >= 2 and len(then.ratios) >= 2:
        moved = unpaired_change(now.ratios, then.ratios)
        if moved is not None:
            return moved
    base = then.ratio
    lo, hi = (c / base for c in now.ci95)
    return now.ratio / base, [lo, hi], not lo <= 1.0 <= hi


def _throughput(current: CompatDoc, baseline: CompatDoc | None,
                threshold: float) -> tuple[list[ThroughputMove], list[Ungated]]:
    """Gating rows against the baseline's: a subject's paired overhead against `none` where
    both runs have one (robust to a loaded machine), and decode tok/s where neither run was
    measured beside another job and the machine's own speed held. A row neither way can
    judge is ungated, with the reason."""
    old = {_bench_key(b): row for b, row in _gating(baseline.bench if baseline else [])}
    moves, ungated = [], []
    for b, row in _gating(current.bench):
        if not b.fingerprint.cpu and not b.fingerprint.device:
            continue
        then = old.get(_bench_key(b))
        if then is None:  # another machine or a new row: its cell is listed as not comparable
            continue
        where = {"cell": b.cell, "model": row.model, "subject": row.subject, "batch": row.batch}
        paired = row.overhead is not None and then.overhead is not None
        if row.overhead is not None and then.overhead is not None:
            change = _overhead_change(row.overhead, then.overhead)
            if beyond(change, threshold):
                moves.append(ThroughputMove(**where, measure="overhead",
                                            before=then.overhead.ratio,
                                            after=row.overhead.ratio, change=change[0] - 1,
                                            ci95=[c - 1 for c in change[1]]))
        noisy = _noisy(row) or _noisy(then) or _speed_moved(row, then, threshold)
        if noisy:
            if not paired:
                ungated.append(Ungated(**where, why=f"measured beside another job ({noisy})"))
            continue
        moved = unpaired_change(row.gen_tok_s.values, then.gen_tok_s.values)
        if moved is None or not beyond(moved, threshold):
            continue
        moves.append(ThroughputMove(**where, before=then.gen_tok_s.median,
                                    after=row.gen_tok_s.median, change=moved[0] - 1,
                                    ci95=[c - 1 for c in moved[1]]))
    return moves, ungated


def regressions(changes: Changes) -> list[str]:
    """One line per change that fails the run unless accepted."""
    lines = [f"{c.cell} {c.about.text} {c.subject}: {c.change}" for c in changes.regressions]
    lines += [f"throughput: {t.cell} {t.model} batch {t.batch} {t.subject} {t.measure} "
              f"{t.before or 0:.{3 if t.measure == 'overhead' else 1}f} -> "
              f"{t.after or 0:.{3 if t.measure == 'overhead' else 1}f} ({t.change:+.0%}, 95% CI "
              f"{t.ci95[0]:+.0%}…{t.ci95[1]:+.0%})"
              for t in changes.throughput if t.change < 0]
    lines += [f"throughput: not gated: {u.cell} {u.model} batch {u.batch} {u.subject}: {u.why}"
              for u in changes.ungated]
    return lines
