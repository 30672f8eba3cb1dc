"""Throughput statistics: per-row medians with 95% confidence intervals, and the paired
overhead of a patched subject against `none`.

Intervals of a median are distribution-free (the order statistics a sign test gives, exact
coverage ≥ 95% whatever the distribution; a bootstrap undercovers at ten-odd rounds). Rounds
of the subjects of a cell are interleaved (see `mlxcompat.turns`), so round i of a subject and
round i of `none` ran back to back; the overhead is the median of those per-round ratios with
the same interval over the pairs. Imports no mlx.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence

import numpy as np

from mlxcompat.records.bench import BenchRow, Calibration, MeasuredBench, PairedRatio, Spread
from mlxcompat.records.names import UPSTREAM
from mlxcompat.settings import BenchProfile

BOOTSTRAP = 2000
SEED = 20261130


MIXED_SPAN = (-2.0, 1.0)  # mixed lengths: length · 2^U, U ~ Uniform(-2, 1)


def prompt_lengths(batch: int, length: int, shape: str = "uniform", seed: int = 0) -> list[int]:
    """`uniform`: every prompt `length` tokens; `mixed`: log-uniform from length/4 to 2·length
    (seeded), the spread a server sees, so padding and segmented prefill are timed too."""
    if shape == "uniform":
        return [length] * batch
    if shape != "mixed":
        raise ValueError(f"unknown prompt shape {shape!r}; expected uniform or mixed")
    rng = np.random.default_rng(seed + 7919)
    exponents = rng.uniform(*MIXED_SPAN, size=batch)
    return [max(1, round(length * 2.0 ** e)) for e in exponents]


def bench_prompts(batch: int, length: int, shape: str = "uniform",
                  seed: int = 0) -> list[list[int]]:
    """Fixed prompts (the same every round and every subject) of the given shape."""
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(1, 128, size=n)]
            for n in prompt_lengths(batch, length, shape, seed)]


CALIBRATION_LOOP = 100_000
NOISY_FOREIGN = 0.20  # other processes used this share of the bench CPU (unpinned: of all CPUs)
NOISY_STEAL = 0.10  # the hypervisor took this share
NOISY_SPREAD = 0.15  # the loop's own spread: the host core's speed moved (a weaker signal;
# past 10%, 134 of the 148 GPU rows of every committed run were wider than 5%: bench_spread
# --by-host, scripts/gpu/README.md "2026-12-07".
# The mark is stored per row, so 10% comes with the next rerun of both `@cuda` cells.)


def calibration_loop() -> float:
    """Seconds of a fixed pure-Python loop (one thread, no BLAS): how much CPU this process
    gets, timed right before a round where /proc/stat cannot say."""
    start = time.perf_counter()
    total = 0
    for i in range(CALIBRATION_LOOP):
        total += i & 7
    return time.perf_counter() - start


def calibration(shares: tuple[float, float] | None, seconds: Sequence[float] = (),
                pinned: bool = True) -> Calibration | None:
    """Noisy when other processes or the hypervisor took the bench CPU (unpinned: the
    machine's CPUs) for a share of the rounds beyond the thresholds; unpinned or without
    /proc/stat, also when the loop timed before each round varied (its spread): a host core
    that slows for seconds at a time moves the rounds of a host-bound GPU run and never
    shows on /proc/stat (reports/evidence/gpu/probe-host-cuda.log). The loop's times are
    kept either way: the gate reads the machine's own speed off their median."""
    where = "the bench CPU" if pinned else "the machine's CPUs"
    found = summarise(seconds) if seconds else None
    why: list[str] = []
    if shares is not None:
        foreign, steal = shares
        why += [f"other processes used {foreign:.0%} of {where} during the rounds"
                ] if foreign > NOISY_FOREIGN else []
        why += [f"the hypervisor took {steal:.0%}"] if steal > NOISY_STEAL else []
    elif found is None:
        return None
    if found is not None and (shares is None or not pinned) \
            and (found.spread or 0.0) > NOISY_SPREAD:
        why.append(f"calibration loop spread {found.spread:.1%} > {NOISY_SPREAD:.0%}")
    return Calibration(foreign=None if shares is None else round(shares[0], 4),
                       steal=None if shares is None else round(shares[1], 4), seconds=found,
                       noisy=bool(why), why="; ".join(why))


def median_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """Distribution-free interval of the median: [x_(k), x_(n+1-k)] with the largest k for
    which a Binomial(n, 1/2) tail below k stays within (1 - level) / 2."""
    data = np.sort(np.asarray(values, dtype=np.float64))
    n = data.size
    if n < 6:  # fewer than 6 values cannot give 95%: the whole range
        return float(data[0]), float(data[-1])
    tail, k = 0.0, 0
    while True:
        tail += math.comb(n, k) / 2**n
        if tail > (1 - level) / 2:
            break
        k += 1
    k = max(k, 1)
    return float(data[k - 1]), float(data[n - k])


def summarise(values: Sequence[float]) -> Spread:
    """Median with its 95% distribution-free interval, its spread (robust CV), mean, sd."""
    data = np.asarray([float(v) for v in values], dtype=np.float64)
    if data.size == 0:
        return Spread(rounds=0)
    mean = float(data.mean())
    sd = float(data.std(ddof=1)) if data.size > 1 else 0.0
    lo, hi = median_interval(data)
    median = float(np.median(data))
    mad = float(np.median(np.abs(data - median)))
    return Spread(median=median, ci95=[lo, hi], mean=mean, stddev=sd,
                  spread=1.4826 * mad / median if median else 0.0, rounds=int(data.size),
                  values=[round(float(v), 6) for v in data])


def paired_ratio(subject: Sequence[float], reference: Sequence[float]) -> PairedRatio | None:
    """Median of per-round ratios subject/reference with its distribution-free 95% interval."""
    n = min(len(subject), len(reference))
    if n == 0:
        return None
    ratios = np.asarray(subject[:n], dtype=np.float64) / np.asarray(reference[:n],
                                                                     dtype=np.float64)
    lo, hi = median_interval(ratios)
    median = float(np.median(ratios))
    significant = not (lo <= 1.0 <= hi)
    return PairedRatio(ratio=median, ci95=[lo, hi], pairs=n, significant=significant,
                       text=overhead_text(median, lo, hi, significant),
                       ratios=[round(float(r), 6) for r in ratios])


def overhead_text(ratio: float, lo: float, hi: float, significant: bool) -> str:
    """Plain words: '8.1% slower (−9.0…−7.2%)', or 'no significant difference (…)'."""
    span = f"({lo - 1:+.1%} … {hi - 1:+.1%})".replace("-", "−")
    if not significant:
        return f"no significant difference {span}"
    change = ratio - 1.0
    return f"{abs(change):.1%} {'slower' if change < 0 else 'faster'} {span}"


def unpaired_change(now: Sequence[float], then: Sequence[float]
                    ) -> tuple[float, list[float], bool] | None:
    """(ratio of medians now/then, its bootstrap interval, significant), each side resampled
    apart."""
    a, b = np.asarray(now, dtype=np.float64), np.asarray(then, dtype=np.float64)
    if a.size < 2 or b.size < 2:
        return None
    rng = np.random.default_rng(SEED)
    ra = np.median(a[rng.integers(0, a.size, size=(BOOTSTRAP, a.size))], axis=1)
    rb = np.median(b[rng.integers(0, b.size, size=(BOOTSTRAP, b.size))], axis=1)
    ratios = ra / rb
    lo, hi = float(np.percentile(ratios, 2.5)), float(np.percentile(ratios, 97.5))
    ratio = float(np.median(a) / np.median(b))
    return ratio, [lo, hi], not (lo <= 1.0 <= hi)


def bench_row(model: str, subject: str, batch: int, profile: BenchProfile,
              decode: list[float], prefill: list[float], peak_mb: float | None, backend: str,
              dtype: str = "float32", prompts: str = "uniform",
              shares: tuple[float, float] | None = None,
              calibrated: Sequence[float] = (), pinned: bool = True) -> MeasuredBench:
    """One measured `bench` row of the cell JSON from its rounds (tok/s per round)."""
    first_last = decode[0] / statistics.median(decode[-max(1, len(decode) // 3):]) \
        if decode else None
    return MeasuredBench(
        model=model, subject=subject, batch=batch, backend=backend, dtype=dtype,
        prompts=prompts, profile=profile.name, gating=profile.gating,
        prompt_tokens=profile.prompt_tokens, gen_tokens=profile.gen_tokens,
        repeats=profile.repeats, gen_tok_s=summarise(decode), prefill_tok_s=summarise(prefill),
        peak_memory_mb=peak_mb, first_round_ratio=first_last,
        calibration=calibration(shares, calibrated, pinned))


def add_overhead(rows: list[BenchRow]) -> None:
    """Paired overhead of every patched subject against `none` on the same model and batch;
    speedup of every subject against `none`'s one-at-a-time throughput."""
    measured = [r for r in rows if isinstance(r, MeasuredBench) and r.gen_tok_s.rounds]
    base = {(r.model, r.batch, r.backend, r.dtype, r.prompts): r for r in measured
            if r.subject == UPSTREAM}
    for r in measured:
        ref = base.get((r.model, r.batch, r.backend, r.dtype, r.prompts))
        if ref is None:
            continue
        seq = ref.sequential_tok_s
        if seq is not None and seq > 0 and r.gen_tok_s.median is not None:
            r.speedup = r.gen_tok_s.median / seq
        if r.subject != UPSTREAM and not r.reused:
            r.overhead = paired_ratio(r.gen_tok_s.values, ref.gen_tok_s.values)
            r.prefill_overhead = paired_ratio(r.prefill_tok_s.values, ref.prefill_tok_s.values)
