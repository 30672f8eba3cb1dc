"""A check that meets mlx's kernel cache half written by another process runs once more (the
row keeps the first error); any other error, or the same one twice, stays an error."""

from __future__ import annotations

from mlxcompat.checks.spec import Case, guarded
from mlxcompat.drivers.kernel_cache import is_half_written

RACE = ("Could not load C++ shared library /tmp/mlx/0.29.1/cpu/libGf4Subtract_contiguous.so: "
        "file too short")
CASE = Case("parity", model="llama", mode="padded")


def _body(errors: list[str]):
    calls = []

    def body():
        calls.append(1)
        if errors:
            raise RuntimeError(errors.pop(0))
        return CASE.row("s", "pass", "exact")

    return body, calls


def test_the_race_is_told_apart_from_other_load_errors() -> None:
    assert is_half_written(RACE)
    assert is_half_written("[Compile::eval_cpu] Failed to load compiled function Ff4Add_x "
                           "/tmp/mlx/0.29.1/cpu/libFf4Add_x.so")
    assert is_half_written("[Compile::eval_cpu] Failed to compile function Ff4Add_x: Failed to "
                           'execute command with return code 1: "g++ -std=c++17 -O3 -shared '
                           '"/tmp/mlx/0.29.1/cpu/Ff4Add_x.cpp"')
    assert not is_half_written("Could not load C++ shared library x.so: undefined symbol: f")
    assert not is_half_written("file too short")


def test_a_half_written_kernel_is_retried_once_and_said(monkeypatch) -> None:
    monkeypatch.setattr("mlxcompat.drivers.kernel_cache.RETRY_PAUSE_S", 0.0)
    body, calls = _body([RACE])
    row = guarded(CASE, "s", body)
    assert row.verdict == "pass" and len(calls) == 2
    assert "file too short" in row.metrics["retried_after"]


def test_twice_is_an_error_and_other_errors_are_not_retried(monkeypatch) -> None:
    monkeypatch.setattr("mlxcompat.drivers.kernel_cache.RETRY_PAUSE_S", 0.0)
    body, calls = _body([RACE, RACE])
    row = guarded(CASE, "s", body)
    assert row.verdict == "error" and len(calls) == 2 and "retried_after" in row.metrics
    body, calls = _body(["boom"])
    row = guarded(CASE, "s", body)
    assert row.verdict == "error" and len(calls) == 1 and "retried_after" not in row.metrics
