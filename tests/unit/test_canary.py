"""The canary is graded like a cell and compared with the newest release cell, not counted."""

from __future__ import annotations

import subprocess

import pytest
from cellkit import MATRIX, cell, result

from mlxcompat.canary import Branch, compare, newest_release_cell, upstream_commit
from mlxcompat.matrix import parse_matrix
from mlxcompat.records.cell import CellDoc

UPSTREAM = Branch(repo="https://github.com/ml-explore/mlx-lm", ref="HEAD",
                  commit="0123456789abcdef0123456789abcdef01234567")


def _docs(canary_rows: list[dict]) -> tuple[CellDoc, CellDoc]:
    release = cell("mlx-lm-0.32.2", "0.32.2", [
        result("parity", "pass", "llama", "fresh"),
        result("parity", "error", "mamba2", "fresh"),  # unexpected in the release cell too
        result("parity", "fail", "mamba", "fresh", max_abs_delta=0.019, tokens_equal=True),
        result("parity", "pass", "qwen3_5", "fresh")])
    return (CellDoc.from_json(release),
            CellDoc.from_json(cell("canary", "0.32.3", canary_rows)))


def test_only_what_the_branch_makes_unexpected_is_new() -> None:
    release, canary = _docs([
        result("parity", "fail", "llama", "fresh"),  # new: passed in the release cell
        result("parity", "error", "mamba2", "fresh"),  # unexpected in both
        result("parity", "fail", "mamba", "fresh", max_abs_delta=0.019, tokens_equal=True),
        result("parity", "pass", "qwen3_5", "fresh")])
    summary = compare(release, canary, parse_matrix(MATRIX), UPSTREAM)
    assert summary.new == ["parity llama fresh none: fail and no expectation covers it"]
    assert len(summary.still) == 1 and summary.fixed == []
    assert summary.line == (
        "canary: mlx-lm 0.32.3 at 0123456789ab (https://github.com/ml-explore/mlx-lm), mlx "
        "0.32.2: 1 unexpected compared with the newest release cell mlx-lm-0.32.2 "
        "(1 unexpected in both, 0 fixed on the branch)")
    assert summary.branch.commit == UPSTREAM.commit


def test_a_row_the_canary_lacks_is_new_and_a_fix_is_counted() -> None:
    release, canary = _docs([
        result("parity", "pass", "llama", "fresh"),
        result("parity", "pass", "mamba2", "fresh"),
        result("parity", "fail", "mamba", "fresh", max_abs_delta=0.019, tokens_equal=True)])
    summary = compare(release, canary, parse_matrix(MATRIX), UPSTREAM)
    assert summary.new == ["parity qwen3_5 fresh none: no row in the canary"]
    assert len(summary.fixed) == 1 and summary.still == []


def test_the_release_cell_is_the_newest_pinned_mlx_lm_cell() -> None:
    assert newest_release_cell(parse_matrix(MATRIX)).id == "mlx-lm-0.32.2"


def test_the_upstream_commit_is_read_from_the_repository(tmp_path) -> None:
    repo = tmp_path / "mlx-lm"
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q", "-b", "main"], check=True)
    subprocess.run([*git, "commit", "-q", "--allow-empty", "-m", "x"], check=True)
    head = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert upstream_commit(f"file://{repo}") == head
    with pytest.raises(RuntimeError, match="no such ref"):
        upstream_commit(f"file://{repo}", "refs/heads/gone")
