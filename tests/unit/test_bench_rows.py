"""Bench statistics: medians with bootstrap intervals, paired overhead with a plain sign."""

from __future__ import annotations

import pytest

from mlxcompat.bench import (
    add_overhead,
    bench_prompts,
    bench_row,
    overhead_text,
    paired_ratio,
    summarise,
    unpaired_change,
)
from mlxcompat.settings import BenchProfile

PROFILE = BenchProfile(name="quick", batches=(1, 8), rounds=5, warmup=1, prompt_tokens=16,
                       gen_tokens=16, models=("llama",))


def test_summarise_median_interval_and_its_one_spread() -> None:
    s = summarise([90.0, 100.0, 110.0, 100.0, 100.0])
    assert s.median == 100.0 and s.rounds == 5
    assert s.ci95[0] <= 100.0 <= s.ci95[1]
    assert s.spread == 0.0  # robust CV: the MAD is 0, one round each side does not move it
    slow = summarise([100.0] * 8 + [40.0])
    assert slow.spread == 0.0 and slow.stddev > 15  # one slow round: stddev moves, spread not


def test_calibration_marks_a_row_noisy_when_others_took_the_cpu() -> None:
    from mlxcompat.bench import calibration

    quiet = calibration((0.03, 0.0))
    assert quiet is not None and not quiet.noisy and quiet.foreign == 0.03
    shared = calibration((0.45, 0.0))
    assert shared is not None and shared.noisy and "used 45% of the bench CPU" in shared.why
    stolen = calibration((0.0, 0.2))
    assert stolen is not None and stolen.noisy and "hypervisor took 20%" in stolen.why


def test_without_proc_stat_the_loop_spread_decides() -> None:
    from mlxcompat.bench import calibration

    steady = calibration(None, [0.010, 0.0101, 0.0099, 0.010, 0.0102])
    assert steady is not None and not steady.noisy and steady.seconds is not None
    loaded = calibration(None, [0.010, 0.020, 0.011, 0.019, 0.010, 0.021])
    assert loaded is not None and loaded.noisy and "loop spread" in loaded.why
    assert calibration(None, []) is None


def test_mixed_prompts_spread_their_lengths_and_uniform_ones_do_not() -> None:
    from mlxcompat.bench import prompt_lengths

    mixed = prompt_lengths(8, 16, "mixed")
    assert len(set(mixed)) > 3 and min(mixed) >= 4 and max(mixed) <= 32
    assert mixed == prompt_lengths(8, 16, "mixed")  # seeded
    assert prompt_lengths(8, 16) == [16] * 8


def test_paired_ratio_says_slower_with_a_minus_sign() -> None:
    base = [100.0, 102.0, 98.0, 101.0, 99.0, 100.0]
    slower = [v * 0.9 for v in base]
    out = paired_ratio(slower, base)
    assert out is not None and out.significant is True and out.ratio == pytest.approx(0.9)
    assert out.text.startswith("10.0% slower")


def test_no_significant_difference_when_the_interval_holds_one() -> None:
    a = [100.0, 101.0, 99.0, 100.5, 99.5]
    b = [100.2, 100.8, 99.1, 100.1, 99.9]
    out = paired_ratio(a, b)
    assert out is not None and out.significant is False
    assert out.text.startswith("no significant difference")


def test_overhead_text_sign_convention() -> None:
    assert overhead_text(1.05, 1.02, 1.08, True).startswith("5.0% faster")


def test_overhead_and_speedup_against_none() -> None:
    rows = [bench_row("llama", s, 8, PROFILE, v, [1.0] * 5, None, "cpu")
            for s, v in (("none", [400.0] * 5), ("mlxcompat", [380.0] * 5))]
    rows[0].sequential_tok_s = 100.0
    add_overhead(rows)
    assert rows[1].overhead is not None and rows[1].overhead.ratio == pytest.approx(0.95)
    assert rows[0].speedup == pytest.approx(4.0) and rows[1].speedup == pytest.approx(3.8)
    assert rows[0].overhead is None


def test_first_round_ratio_shows_a_cold_start() -> None:
    row = bench_row("llama", "none", 8, PROFILE, [50.0, 100.0, 100.0, 100.0, 100.0],
                    [1.0] * 5, None, "cpu")
    assert row.first_round_ratio == pytest.approx(0.5)


def test_unpaired_change_for_the_baseline() -> None:
    now, then = [60.0, 61.0, 59.0, 60.5], [100.0, 101.0, 99.0, 100.5]
    out = unpaired_change(now, then)
    assert out is not None
    ratio, _, significant = out
    assert significant and ratio == pytest.approx(0.6, rel=0.01)


def test_prompts_are_fixed_and_equal_length() -> None:
    a, b = bench_prompts(4, 16), bench_prompts(4, 16)
    assert a == b and {len(p) for p in a} == {16}


def test_a_profile_with_dtypes_gives_one_throughput_case_per_dtype() -> None:
    from mlxcompat.matrix import parse_matrix
    from mlxcompat.spec import SubjectRun
    from mlxcompat.suite.cases import bench_cases

    m = parse_matrix({"schema": 3, "settings": {"bench": {"default": "gpu", "profiles": {
        "gpu": {"batches": [8], "dtypes": ["float32", "bfloat16"]}}}},
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
        "subjects": {"none": {}}, "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2"}]})
    profile = m.settings.bench.profiles["gpu"].model_copy(update={"models": ("llama",)})
    spec = SubjectRun.with_registry(m.registry, cell="c", subject="none", out="x",
                                    models=["llama"], bench=profile)
    ids = [c.id for c in bench_cases(spec, m.registry, "throughput")]
    assert ids == ["llama-8", "llama-8-bfloat16"]
    assert [c.id for c in bench_cases(spec, m.registry, "sequential")] == [
        "llama-2", "llama-2-bfloat16"]  # once per dtype, not per batch


def test_an_unknown_dtype_is_refused() -> None:
    from mlxcompat.matrix import parse_matrix
    from mlxcompat.validation import MatrixError

    with pytest.raises(MatrixError, match="dtypes"):
        parse_matrix({"schema": 3, "settings": {"bench": {"profiles": {
            "gpu": {"dtypes": ["int8"]}}}},
            "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
            "subjects": {"none": {}}, "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2"}]})


def test_repeats_make_one_round_of_several_runs_and_zero_is_refused() -> None:
    from mlxcompat.drivers.bench import Timing, combined
    from mlxcompat.matrix import parse_matrix
    from mlxcompat.validation import MatrixError

    def matrix(repeats):
        return {"schema": 3, "settings": {"bench": {"profiles": {"gpu": {"repeats": repeats}}}},
                "backends": {"cpu": {"device": "cpu",
                                     "requirement": {"linux": "mlx[cpu]=={v}"}}},
                "subjects": {"none": {}}, "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2"}]}

    profile = parse_matrix(matrix(4)).settings.bench.profiles["gpu"]
    assert profile.repeats == 4
    assert bench_row("llama", "none", 8, profile, [1.0], [1.0], None, "cpu").repeats == 4
    with pytest.raises(MatrixError, match="repeats"):
        parse_matrix(matrix(0))
    fast, slow = Timing(32, 0.01, 64, 0.05), Timing(32, 0.03, 64, 0.15)
    both = combined([fast, slow])
    assert both.decode_tok_s == pytest.approx(128 / 0.20)  # tokens over seconds, not a mean
    assert both.decode_tok_s != pytest.approx((fast.decode_tok_s + slow.decode_tok_s) / 2)
    assert both.prefill_tok_s == pytest.approx(64 / 0.04)


def test_unpinned_rounds_count_the_machine_s_cpus() -> None:
    from mlxcompat.bench import calibration

    found = calibration((0.3, 0.0), pinned=False)
    assert found is not None and found.noisy and "of the machine's CPUs" in found.why


def test_unpinned_a_moving_loop_marks_the_row_noisy_pinned_it_does_not() -> None:
    """Unpinned (GPU backends) /proc/stat cannot see the host core slowing; the loop can."""
    from mlxcompat.bench import calibration

    moving = [0.0035, 0.0047, 0.0061, 0.0058, 0.0036, 0.0042, 0.0060, 0.0029, 0.0052]
    unpinned = calibration((0.01, 0.0), moving, pinned=False)
    assert unpinned is not None and unpinned.noisy and "loop spread" in unpinned.why
    assert unpinned.foreign == 0.01
    pinned = calibration((0.01, 0.0), moving, pinned=True)
    assert pinned is not None and not pinned.noisy  # the pinned CPU's /proc/stat decides
    steady = calibration((0.01, 0.0), [0.0035, 0.0036, 0.0035, 0.0034, 0.0035], pinned=False)
    assert steady is not None and not steady.noisy
