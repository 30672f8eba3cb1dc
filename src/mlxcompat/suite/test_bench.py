"""Throughput: batched decode tok/s (pytest-benchmark, pedantic), rounds interleaved across
the cell's subjects by the runner's turn-taking; one prompt at a time for `none` (the
speedup's baseline).

Figures go to the cell JSON's `bench` rows; pytest-benchmark's own JSON is kept beside it.
No assertion on speed: targets are read from the report, never asserted in a test.
"""

import gc
from typing import Any

import pytest

from mlxcompat.bench import bench_prompts, bench_row, calibration_loop, summarise
from mlxcompat.cpuwatch import CpuWatch, cpu_times
from mlxcompat.errors import SkipCheck, describe_exception
from mlxcompat.models import build_model
from mlxcompat.records.bench import FailedBench, SequentialBench, SkippedBench

SEQUENTIAL_ROUNDS = 2


def _built(decl, dtype: str):
    """The tiny model; for a throughput row of another dtype a copy of its own, cast or
    quantized (`q4`) the way dtype-parity builds it, so the shared float32 model stays."""
    if dtype == "float32" or decl.runner != "lm":
        net = build_model(decl)
        if dtype != "float32":
            import mlx.core as mx

            net.set_dtype(getattr(mx, dtype))
        return net
    from mlxcompat.checks.dtypes import model_in

    return model_in(decl.factory, dtype)


def test_throughput(bench_case, registry, mlxcompat_run, turn_taker, placement, benchmark,
                    record_bench, broken_reason, backend):
    from mlxcompat.drivers import bench as timers

    profile = mlxcompat_run.bench
    case = bench_case
    base = {"model": case.model, "subject": mlxcompat_run.subject, "batch": case.batch,
            "dtype": case.dtype, "prompts": case.prompts, "profile": profile.name,
            "backend": backend}
    if broken_reason:
        record_bench(SkippedBench(**base, reason=f"not benchmarked: {broken_reason}"))
        pytest.skip(broken_reason)
    decl = registry.models[case.model]
    try:
        net = _built(decl, case.dtype)
    except SkipCheck as exc:
        record_bench(SkippedBench(**base, reason=str(exc)))
        pytest.skip(str(exc))
    prompts = bench_prompts(case.batch, profile.prompt_tokens, case.prompts)
    timer = timers.time_glm4v if decl.runner == "glm4v" else timers.time_batched
    timings: list[Any] = []
    calibrated: list[float] = []
    label = f"{case.model} b{case.batch} {case.dtype} {case.prompts}"
    watch = CpuWatch(None)  # its CPU is the pinned one, known from the first turn on
    proc_stat = cpu_times(None) is not None
    moved_before: list[int] = []  # the placement's moves when the first measured round came

    def setup():
        turn_taker.turn(f"{label} batched")
        if len(calibrated) == profile.warmup:
            moved_before.append(placement.moves)
        # in the round's own turn, right before it, on the CPU the round will run on (a
        # pinned worker's placement is `free`: it only times the loop)
        calibrated.append(placement.settle(calibration_loop))

    def one_round():
        gc.disable()
        watched = len(timings) >= profile.warmup
        if watched:
            watch.cpu = turn_taker.pinned
            watch.start()
        try:
            timings.append(timers.combined([timer(net, prompts, profile.gen_tokens)
                                            for _ in range(profile.repeats)]))
        finally:
            if watched:
                watch.stop()
            gc.enable()

    timers.reset_peak_memory()
    try:
        benchmark.pedantic(one_round, rounds=profile.rounds, warmup_rounds=profile.warmup,
                           iterations=1, setup=setup)
    except Exception as exc:
        record_bench(FailedBench(**base, detail=describe_exception(exc)))
        pytest.skip(f"batched path does not run here: {describe_exception(exc)}")
    measured = timings[profile.warmup:]
    row = bench_row(case.model, mlxcompat_run.subject, case.batch, profile,
                    [t.decode_tok_s for t in measured], [t.prefill_tok_s for t in measured],
                    timers.peak_memory_mb(), backend, case.dtype, case.prompts,
                    watch.shares() if proc_stat else None, calibrated[profile.warmup:],
                    pinned=turn_taker.pinned is not None)
    row.pinned_cpu = turn_taker.pinned
    row.placement = mlxcompat_run.bench_place
    row.moves = placement.moves - moved_before[0]
    row.others_frozen = mlxcompat_run.others_frozen
    benchmark.extra_info.update(gen_tok_s_median=row.gen_tok_s.median, batch=row.batch,
                                model=row.model, subject=row.subject, dtype=row.dtype,
                                profile=row.profile)
    record_bench(row)


def test_sequential(bench_case, registry, mlxcompat_run, turn_taker, record_bench, backend):
    """The same prompts one at a time through `generate_step`: the baseline of the speedup.

    Measured once per cell, by `none`, after every subject's batched rounds.
    """
    from mlxcompat.drivers import bench as timers

    profile = mlxcompat_run.bench
    case = bench_case
    try:
        net = _built(registry.models[case.model], case.dtype)
    except SkipCheck as exc:
        pytest.skip(str(exc))
    prompts = bench_prompts(case.batch, profile.prompt_tokens, case.prompts)
    rounds = []
    for i in range(1 + SEQUENTIAL_ROUNDS):
        turn_taker.turn(f"{case.model} {case.dtype} {case.prompts} sequential {i}")
        rounds.append(timers.time_sequential(net, prompts, profile.gen_tokens))
    record_bench(SequentialBench(model=case.model, subject=mlxcompat_run.subject,
                                 batch=case.batch, dtype=case.dtype, prompts=case.prompts,
                                 backend=backend, profile=profile.name,
                                 tok_s=summarise([t.decode_tok_s for t in rounds[1:]])))


BENCH_KIND = {"test_throughput": "throughput", "test_sequential": "sequential"}
