"""`mlxcompat bisect`: the search, with the cell runs replaced by a verdict table, and the
ways it must fail loudly instead of reporting 'no change'."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import pytest

from mlxcompat import bisection as bisect_mod
from mlxcompat.cli import main
from mlxcompat.matrix import MatrixError, parse_matrix

VERSIONS = ["0.30.4", "0.30.5", "0.30.6", "0.30.7", "0.31.1", "0.31.2", "0.31.3", "0.32.0"]
MATRIX = parse_matrix({"schema": 3,
                       "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "x=={v}"}}},
                       "subjects": {"none": {}}, "cells": [{"mlx-lm": "0.32.0", "mlx": "0.32.2"}]})


class FakeBisect(bisect_mod.Bisect):
    truth: ClassVar[dict[str, str]] = {}

    def write_matrix(self, versions, wheels):
        return Path("unused")

    def verdict(self, version, matrix_file):
        self.seen[version] = (self.truth[version], "")
        return self.seen[version]


def _run(monkeypatch, tmp_path, truth, model="qwen3_next"):
    monkeypatch.setattr(bisect_mod, "releases", lambda *a: VERSIONS)
    monkeypatch.setattr(bisect_mod, "_narrow", lambda b, versions, wheels: versions)
    b = FakeBisect(MATRIX, "parity", model, {"mode": "history"}, "none", tmp_path, tmp_path)
    b.truth = truth
    return bisect_mod.run_bisect(b, VERSIONS[0], VERSIONS[-1], tmp_path)


def test_finds_first_release_that_differs(monkeypatch, tmp_path) -> None:
    truth = {v: ("fail" if i < 5 else "pass") for i, v in enumerate(VERSIONS)}
    result = _run(monkeypatch, tmp_path, truth)
    assert (result["last_same"], result["boundary"]) == ("0.31.1", "0.31.2")
    assert len(result["visited"]) <= 5


def test_same_verdict_at_both_bounds_stops_early(monkeypatch, tmp_path) -> None:
    result = _run(monkeypatch, tmp_path, dict.fromkeys(VERSIONS, "pass"))
    assert result["boundary"] is None
    assert set(result["visited"]) == {VERSIONS[0], VERSIONS[-1]}


@pytest.mark.parametrize("verdict", ["skip", "missing", "install-failed", "no-result"])
def test_a_bound_without_a_verdict_is_refused(monkeypatch, tmp_path, verdict) -> None:
    truth = dict.fromkeys(VERSIONS, "pass")
    truth[VERSIONS[0]] = verdict
    with pytest.raises(bisect_mod.BisectError, match="gives no verdict to compare"):
        _run(monkeypatch, tmp_path, truth)


def test_range_starts_where_the_model_exists(monkeypatch, tmp_path, capsys) -> None:
    monkeypatch.setattr(bisect_mod, "wheel_for", lambda pkg, v, wheels: v)
    monkeypatch.setattr(bisect_mod, "has_file", lambda wheel, name: wheel >= "0.30.7")
    b = FakeBisect(MATRIX, "parity", "qwen3_5", {"mode": "history"}, "none", tmp_path,
                   tmp_path)
    assert bisect_mod._narrow(b, VERSIONS, tmp_path)[0] == "0.30.7"
    assert "qwen3_5 first exists in mlx-lm 0.30.7" in capsys.readouterr().out


@pytest.mark.parametrize(("args", "words"), [
    (["--check", "parrity"], "unknown check 'parrity'; valid: import, parity"),
    (["--model", "gpt2"], "unknown model 'gpt2'; valid: llama"),
    (["--mode", "histroy"], "unknown mode 'histroy' of parity; valid: fresh"),
    (["--subject", "nobody"], "unknown subject 'nobody'"),
])
def test_unknown_names_are_refused(args, words) -> None:
    base = {"--check": "parity", "--model": "qwen3_5", "--mode": "history", "--subject": "none"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    with pytest.raises(MatrixError, match=words.replace("(", r"\(")):
        bisect_mod.validate(MATRIX, base["--check"], base["--model"], {"mode": base["--mode"]},
                            base["--subject"])


def test_a_key_the_check_does_not_have_is_refused() -> None:
    with pytest.raises(MatrixError, match="parity rows have no role"):
        bisect_mod.validate(MATRIX, "parity", "llama", {"role": "mamba"}, "none")


def test_cli_exits_non_zero_on_a_misspelt_check(tmp_path, capsys) -> None:
    matrix = Path(__file__).resolve().parents[2] / "matrix.yaml"
    code = main(["--matrix", str(matrix), "bisect", "--check", "parrity", "--model", "qwen3_5",
                 "--between", "0.30.4", "0.32.2", "--work", str(tmp_path)])
    assert code == 2
    assert "unknown check 'parrity'; valid: import, parity" in capsys.readouterr().err


def test_range_needs_two_releases(monkeypatch, tmp_path) -> None:
    monkeypatch.setattr(bisect_mod, "releases", lambda *a: ["0.32.0"])
    b = FakeBisect(MATRIX, "parity", "llama", {"mode": "fresh"}, "none", tmp_path, tmp_path)
    with pytest.raises(bisect_mod.BisectError, match="fewer than two releases"):
        bisect_mod.run_bisect(b, "0.32.0", "0.32.0", tmp_path)


def test_the_mlx_vlm_axis_pins_the_mlx_lm_of_the_nearest_vlm_cell() -> None:
    matrix = parse_matrix({
        "schema": 3, "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "x=={v}"}}},
        "subjects": {"none": {}},
        "cells": [{"mlx-vlm": "0.7.8", "mlx-lm": "0.32.1", "mlx": "0.32.3"},
                  {"mlx-vlm": "0.7.10", "mlx-lm": "0.32.2", "mlx": "0.32.4"}]})
    b = bisect_mod.Bisect(matrix, "glm4v", "glm4v_moe", {"scenario": "padded"}, "none",
                          Path("w"), Path("n"), "mlx-vlm")
    assert b.cell_id("0.7.9") == "mlx-vlm-0.7.9"
    assert b.beside("0.7.9") == "0.32.2" and b.beside("0.7.8") == "0.32.1"
    assert b.beside("0.8.0") == "0.32.2"
