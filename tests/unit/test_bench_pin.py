"""The timed rounds' CPU pin: on the CPU backend only, unless the environment says otherwise."""

from __future__ import annotations

import os

import pytest

from mlxcompat.workers import bench_cpu

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_getaffinity"), reason="Linux only")


def test_the_cpu_backend_pins_and_a_gpu_backend_does_not(monkeypatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_BENCH_PIN", raising=False)
    assert bench_cpu("cpu") == max(os.sched_getaffinity(0))
    assert bench_cpu("gpu") is None


def test_the_environment_forces_either_way(monkeypatch) -> None:
    monkeypatch.setenv("MLXCOMPAT_BENCH_PIN", "0")
    assert bench_cpu("cpu") is None
    monkeypatch.setenv("MLXCOMPAT_BENCH_PIN", "1")
    assert bench_cpu("gpu") == max(os.sched_getaffinity(0))
