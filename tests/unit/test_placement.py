"""Placing the timed thread of an unpinned (GPU) subject: who runs where, and when `steady`
moves it. The loop is a fake whose speed depends on the CPU the main thread is on."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest

from mlxcompat.placement import Placement
from mlxcompat.workers import bench_place

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity")
                                or len(os.sched_getaffinity(0)) < 2,
                                reason="needs Linux and two CPUs")
MAIN = threading.get_native_id()


@pytest.fixture(autouse=True)
def _every_cpu_back() -> Iterator[None]:
    every = os.sched_getaffinity(0)
    yield
    for task in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(task), every)
        except OSError:
            continue


@pytest.fixture
def other_thread() -> Iterator[int]:
    """A second thread of this process (as MLX's stream threads are), its native id."""
    ready, stop = threading.Event(), threading.Event()
    box: list[int] = []

    def run() -> None:
        box.append(threading.get_native_id())
        ready.set()
        stop.wait()

    thread = threading.Thread(target=run)
    thread.start()
    ready.wait()
    yield box[0]
    stop.set()
    thread.join()


class Core:
    """A loop that takes `slow` seconds on the CPUs named slow, `fast` elsewhere."""

    def __init__(self, slow_cpus: set[int], fast: float = 0.0035, slow: float = 0.0072) -> None:
        self.slow_cpus, self.fast, self.slow = slow_cpus, fast, slow
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        here = os.sched_getaffinity(MAIN)
        assert len(here) == 1, f"the loop ran unplaced, on {here}"
        return self.slow if here <= self.slow_cpus else self.fast


def test_free_times_the_loop_and_moves_nothing(other_thread: int) -> None:
    every = os.sched_getaffinity(0)
    place = Placement("free")
    assert place.settle(lambda: 0.004) == 0.004
    assert os.sched_getaffinity(MAIN) == every == os.sched_getaffinity(other_thread)
    assert place.cpu is None and place.moves == 0


def test_alone_keeps_every_other_thread_off_the_main_threads_cpu(other_thread: int) -> None:
    cpus = sorted(os.sched_getaffinity(0))
    place = Placement("alone")
    place.settle(Core(slow_cpus=set()))
    assert place.cpu is not None
    assert os.sched_getaffinity(MAIN) == {place.cpu}
    assert os.sched_getaffinity(other_thread) == set(cpus) - {place.cpu}


def test_the_first_round_starts_on_the_fastest_cpu() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    core = Core(slow_cpus=set(cpus[1:]))
    place = Placement("alone")
    assert place.settle(core) == core.fast
    assert place.cpu == cpus[0]
    assert core.calls == len(cpus) + 1  # every CPU once, then where the round runs


def test_steady_moves_the_main_thread_off_a_core_that_slowed() -> None:
    cpus = sorted(os.sched_getaffinity(0))
    core = Core(slow_cpus=set())
    place = Placement("steady")
    place.settle(core)
    start = place.cpu
    assert start is not None and place.moves == 0
    core.slow_cpus = {start}
    assert place.settle(core) == core.fast
    assert place.cpu != start and place.moves == 1
    assert os.sched_getaffinity(MAIN) == {place.cpu} and place.cpu in cpus


def test_steady_stays_where_the_core_holds_and_alone_never_moves() -> None:
    core = Core(slow_cpus=set())
    steady, alone = Placement("steady"), Placement("alone")
    for place in (steady, alone):
        place.settle(core)
    start = alone.cpu
    core.slow_cpus = {start} if start is not None else set()
    assert alone.settle(core) == core.slow and alone.cpu == start and alone.moves == 0
    core.slow_cpus = set()
    for _ in range(3):
        steady.settle(core)
    assert steady.moves == 0


def test_steady_keeps_the_fastest_cpu_found_when_every_cpu_is_slow() -> None:
    cpus = set(os.sched_getaffinity(0))
    core = Core(slow_cpus=set())
    place = Placement("steady")
    place.settle(core)
    core.slow_cpus = cpus
    assert place.settle(core) == core.slow
    assert 1 <= place.moves <= len(cpus)


def test_the_runner_names_the_policy_only_where_rounds_are_unpinned(monkeypatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_BENCH_PIN", raising=False)
    monkeypatch.delenv("MLXCOMPAT_BENCH_PLACE", raising=False)
    assert bench_place("cpu") == ""
    assert bench_place("gpu") == "free"
    monkeypatch.setenv("MLXCOMPAT_BENCH_PLACE", "steady")
    assert bench_place("gpu") == "steady" and bench_place("cpu") == ""
    monkeypatch.setenv("MLXCOMPAT_BENCH_PLACE", "stedy")
    for device in ("gpu", "cpu"):  # a mistyped policy fails where it would place nothing too
        with pytest.raises(ValueError, match="stedy"):
            bench_place(device)
    with pytest.raises(ValueError, match="unknown placement"):
        Placement("pinned")


def test_a_main_thread_that_cannot_move_fails_the_round_rather_than_run_unplaced() -> None:
    place = Placement("alone", {*os.sched_getaffinity(0), 100_000})  # no such CPU
    with pytest.raises(OSError):
        place.place(100_000)
