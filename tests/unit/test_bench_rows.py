"""Bench row arithmetic: statistics over rounds, speedup, overhead against `none`."""

from __future__ import annotations

import pytest

from mlxcompat.bench import Profile, add_overhead, bench_prompts, bench_row, summarise


class T:
    def __init__(self, decode: float, prefill: float = 100.0) -> None:
        self.decode_tok_s, self.prefill_tok_s = decode, prefill


PROFILE = Profile("quick", (1, 8), 3, 1, 16, 16, ("llama",))


def test_summarise_mean_sd_cv() -> None:
    s = summarise([90.0, 100.0, 110.0])
    assert s["mean"] == pytest.approx(100.0)
    assert s["stddev"] == pytest.approx(10.0)
    assert s["cv"] == pytest.approx(0.1)
    assert s["rounds"] == 3


def test_speedup_is_batched_over_sequential() -> None:
    row = bench_row("llama", "none", 8, PROFILE, [T(400.0), T(400.0)], [T(100.0)], 12.5, "cpu")
    assert row["speedup"] == pytest.approx(4.0)
    assert row["gen_tok_s"]["rounds"] == 2
    assert row["peak_memory_mb"] == 12.5


def test_overhead_against_none_on_the_same_batch() -> None:
    rows = [bench_row("llama", s, 8, PROFILE, [T(v)], None, None, "cpu")
            for s, v in (("none", 400.0), ("mlxcompat", 380.0))]
    rows.append(bench_row("llama", "mlxcompat", 1, PROFILE, [T(50.0)], None, None, "cpu"))
    add_overhead(rows)
    assert rows[1]["overhead"] == pytest.approx(-0.05)
    assert "overhead" not in rows[0] and "overhead" not in rows[2]


def test_prompts_are_fixed_and_equal_length() -> None:
    a, b = bench_prompts(4, 16), bench_prompts(4, 16)
    assert a == b and {len(p) for p in a} == {16}
