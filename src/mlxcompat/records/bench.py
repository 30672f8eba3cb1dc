"""Throughput rows, tagged by `kind`: measured · skipped · failed (and `sequential`, the
one-at-a-time baseline a subject process measures, folded into `none`'s measured rows)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from mlxcompat.records.base import Record


class Spread(Record):
    """Rounds of one figure: the median with its 95% distribution-free interval, and its
    `spread`: the robust coefficient of variation 1.4826·MAD/median, the one spread figure the
    JSON, the report and the gate use (centred like the median they report; one slow round
    does not inflate it, and interference is caught apart: see `Calibration`)."""

    rounds: int = 0
    median: float | None = None
    ci95: list[float] = Field(default_factory=list)
    spread: float | None = None
    mean: float | None = None
    stddev: float | None = None
    values: list[float] = Field(default_factory=list)


class PairedRatio(Record):
    """Median of per-round ratios against `none` (interleaved rounds), with its interval."""

    ratio: float
    ci95: list[float]
    pairs: int
    significant: bool
    text: str
    ratios: list[float] = Field(default_factory=list, description=(
        "The per-round ratios, so a later run's gate can weigh this run's own spread."))


class _Bench(Record):
    model: str
    subject: str
    batch: int
    dtype: str = "float32"
    prompts: Literal["uniform", "mixed"] = "uniform"  # prompt lengths (bench.bench_prompts)
    profile: str = ""
    backend: str = ""
    reused: bool = False


class Calibration(Record):
    """What else ran while this row's timed rounds did. On Linux (cpuwatch.py): `foreign`,
    the share of the bench CPU's time other processes used during the rounds (unpinned: of
    all the machine's CPUs), and `steal`, the share the hypervisor took. `seconds`: a fixed
    loop timed before every round; where /proc/stat is absent its spread decides `noisy`, and
    the gate compares its median with the baseline's (the machine's own speed)."""

    foreign: float | None = None
    steal: float | None = None
    seconds: Spread | None = None
    noisy: bool
    why: str = ""


class MeasuredBench(_Bench):
    kind: Literal["measured"] = "measured"
    gating: bool = False
    prompt_tokens: int = 0
    gen_tokens: int = 0
    repeats: int = 1  # runs per round (the profile's `repeats`)
    calibration: Calibration | None = None
    prefill_overhead: PairedRatio | None = None  # prefill tok/s against none's, paired
    gen_tok_s: Spread
    prefill_tok_s: Spread
    sequential_tok_s: float | None = None  # `none`'s one-at-a-time median, the speedup's base
    speedup: float | None = None
    peak_memory_mb: float | None = None
    first_round_ratio: float | None = None
    pinned_cpu: int | None = None
    placement: str = ""  # unpinned: the timed thread's placement policy (mlxcompat.placement)
    moves: int = 0  # times the `steady` policy moved the timed thread during the rounds
    others_frozen: bool = False  # the cell's other subjects were frozen during its rounds
    overhead: PairedRatio | None = None


class SkippedBench(_Bench):
    kind: Literal["skipped"] = "skipped"
    reason: str


class FailedBench(_Bench):
    kind: Literal["failed"] = "failed"
    what: Literal["throughput", "sequential"] = "throughput"
    detail: str


class SequentialBench(_Bench):
    kind: Literal["sequential"] = "sequential"
    tok_s: Spread


BenchRow = Annotated[MeasuredBench | SkippedBench | FailedBench | SequentialBench,
                     Field(discriminator="kind")]
