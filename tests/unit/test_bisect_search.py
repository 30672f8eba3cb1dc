"""Binary search of `mlxcompat bisect`, with the cell runs replaced by a verdict table."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from mlxcompat import bisect as bisect_mod
from mlxcompat.matrix import parse_matrix

VERSIONS = ["0.30.4", "0.30.5", "0.30.6", "0.30.7", "0.31.1", "0.31.2", "0.31.3", "0.32.0"]
MATRIX = parse_matrix({"schema": 1,
                       "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "x=={v}"}}},
                       "subjects": {"none": {}}, "cells": [{"mlx-lm": "0.32.0", "mlx": "0.32.2"}]})


class FakeBisect(bisect_mod.Bisect):
    truth: ClassVar[dict[str, str]] = {}

    def write_matrix(self, versions, wheels):
        return Path("unused")

    def verdict(self, version, matrix_file):
        self.seen[version] = (self.truth[version], "")
        return self.seen[version]


def _run(monkeypatch, tmp_path, truth):
    monkeypatch.setattr(bisect_mod, "releases", lambda *a: VERSIONS)
    b = FakeBisect(MATRIX, "parity", "qwen3_next", "history", "none", tmp_path, tmp_path)
    b.truth = truth
    return bisect_mod.run_bisect(b, VERSIONS[0], VERSIONS[-1], tmp_path)


def test_finds_first_release_that_differs(monkeypatch, tmp_path) -> None:
    truth = {v: ("error" if i < 5 else "pass") for i, v in enumerate(VERSIONS)}
    result = _run(monkeypatch, tmp_path, truth)
    assert (result["last_same"], result["boundary"]) == ("0.31.1", "0.31.2")
    assert len(result["visited"]) <= 5
    assert result["visited"]["0.31.2"]["verdict"] == "pass"


def test_same_verdict_at_both_bounds_stops_early(monkeypatch, tmp_path) -> None:
    result = _run(monkeypatch, tmp_path, dict.fromkeys(VERSIONS, "pass"))
    assert result["boundary"] is None
    assert set(result["visited"]) == {VERSIONS[0], VERSIONS[-1]}


def test_an_error_is_a_verdict_like_any_other(monkeypatch, tmp_path) -> None:
    truth = {v: ("pass" if i < 2 else "error") for i, v in enumerate(VERSIONS)}
    assert _run(monkeypatch, tmp_path, truth)["boundary"] == "0.30.6"


def test_range_needs_two_releases(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(bisect_mod, "releases", lambda *a: ["0.32.0"])
    b = FakeBisect(MATRIX, "parity", "llama", "fresh", "none", tmp_path, tmp_path)
    with pytest.raises(ValueError, match="fewer than two releases"):
        bisect_mod.run_bisect(b, "0.32.0", "0.32.0", tmp_path)
