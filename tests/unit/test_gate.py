"""The throughput gate against a baseline: a subject's paired overhead is judged even on a
loaded machine, absolute tok/s only on a quiet one, and what neither can judge fails."""

from __future__ import annotations

import numpy as np

from mlxcompat.bench import add_overhead, bench_row
from mlxcompat.records.cell import Fingerprint
from mlxcompat.records.report import CompatDoc, ReportBench
from mlxcompat.report.baseline import diff, regressions
from mlxcompat.settings import BenchProfile

GATE = BenchProfile(name="gate", batches=(8,), rounds=9, warmup=1, prompt_tokens=16,
                    gen_tokens=16, gating=True)
MACHINE = Fingerprint(os="linux", arch="x86_64", cpu="test", cores=2, backend="cpu")
QUIET = [0.010, 0.0101, 0.0099, 0.010, 0.0100, 0.0101, 0.0099, 0.010, 0.0100]
LOADED = [0.010, 0.020, 0.011, 0.031, 0.010, 0.025, 0.012, 0.010, 0.030]


def _run(none: float, subject: float, calibrated: list[float]) -> CompatDoc:
    rng = np.random.default_rng(int(none + subject))
    wobble = 1 + rng.uniform(-0.01, 0.01, size=9)
    rows = [bench_row("llama", name, 8, GATE, list(tok_s * wobble), [1000.0] * 9, None, "cpu",
                      calibrated=calibrated)
            for name, tok_s in (("none", none), ("slowpoke", subject))]
    add_overhead(list(rows))
    return CompatDoc(bench=[ReportBench(cell="c", fingerprint=MACHINE, row=r) for r in rows])


def test_a_subject_slowed_down_is_flagged_through_its_overhead_even_on_a_loaded_machine():
    baseline = _run(2000.0, 2000.0, LOADED)
    now = _run(5000.0, 2500.0, LOADED)  # the machine got faster, the subject did not
    lines = regressions(diff(now, baseline, 0.2))
    assert any("slowpoke overhead" in line and "(-50%" in line for line in lines), lines
    assert any(line.startswith("throughput: not gated: c llama batch 8 none: measured beside")
               for line in lines), lines


def test_on_a_quiet_machine_absolute_throughput_is_gated_too() -> None:
    baseline = _run(2000.0, 2000.0, QUIET)
    lines = regressions(diff(_run(1000.0, 1000.0, QUIET), baseline, 0.2))
    assert any(line.startswith("throughput: c llama batch 8 none tok/s") for line in lines)
    assert not any("overhead" in line for line in lines), lines  # both slowed alike
    assert regressions(diff(_run(2010.0, 1995.0, QUIET), baseline, 0.2)) == []


def test_when_the_machine_itself_slowed_absolute_throughput_is_not_gated() -> None:
    """A VM whose host got busy: nothing else ran on the bench CPU, every round is steady, yet
    the fixed loop takes 30% longer than in the baseline; a drop in tok/s then says nothing
    about mlx-lm, and the row fails as not gated rather than as a regression."""
    baseline = _run(2000.0, 2000.0, QUIET)
    slower = [s * 1.3 for s in QUIET]
    lines = regressions(diff(_run(1400.0, 1400.0, slower), baseline, 0.2))
    assert not any(line.startswith("throughput: c llama batch 8 none tok/s") for line in lines)
    assert any(line.startswith("throughput: not gated: c llama batch 8 none:")
               and "the machine's own speed moved" in line for line in lines), lines
