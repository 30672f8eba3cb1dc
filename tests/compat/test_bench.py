"""Throughput: batched decode tok/s (pytest-benchmark, pedantic) vs one prompt at a time.

Figures go to the cell JSON's `bench` rows; pytest-benchmark's own JSON is kept beside it.
No assertion on speed: targets are read from the report, never asserted in a test.
"""

import pytest

from mlxcompat.bench import bench_prompts, bench_row, measure
from mlxcompat.models import MODELS
from mlxcompat.results import SkipCheck, describe_exception


def test_throughput(bench_model, batch, bench_profile, subject_name, backend, benchmark,
                    record_bench):
    from mlxcompat.drivers import bench as timers

    spec = MODELS[bench_model]
    try:
        net = spec.build(0)
    except SkipCheck as exc:
        pytest.skip(str(exc))
    prompts = bench_prompts(batch, bench_profile.prompt_tokens)
    timer = timers.time_glm4v if spec.family == "glm4v" else timers.time_batched
    timings = []

    def run():
        timings.append(timer(net, prompts, bench_profile.gen_tokens))

    timers.reset_peak_memory()
    try:
        benchmark.pedantic(run, rounds=bench_profile.rounds,
                           warmup_rounds=bench_profile.warmup, iterations=1)
    except Exception as exc:
        record_bench({"model": bench_model, "subject": subject_name, "batch": batch,
                      "backend": backend, "profile": bench_profile.name,
                      "error": describe_exception(exc)})
        pytest.skip(f"batched path does not run here: {describe_exception(exc)}")
    peak = timers.peak_memory_mb()
    sequential = None
    if spec.family == "lm":
        sequential = measure(
            lambda: timers.time_sequential(net, prompts, bench_profile.gen_tokens),
            rounds=bench_profile.rounds, warmup=1)
    row = bench_row(bench_model, subject_name, batch, bench_profile,
                    timings[bench_profile.warmup:], sequential, peak, backend)
    benchmark.extra_info.update({k: v for k, v in row.items() if k != "gen_tok_s"},
                                gen_tok_s_mean=row["gen_tok_s"]["mean"])
    record_bench(row)
