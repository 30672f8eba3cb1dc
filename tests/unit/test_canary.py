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
        "(1 unexpected in both, 0 fixed on the branch; graded with the release's expectations)")
    assert summary.branch.commit == UPSTREAM.commit


def test_a_row_the_canary_lacks_is_new_and_a_fix_is_counted() -> None:
    release, canary = _docs([
        result("parity", "pass", "llama", "fresh"),
        result("parity", "pass", "mamba2", "fresh"),
        result("parity", "fail", "mamba", "fresh", max_abs_delta=0.019, tokens_equal=True)])
    summary = compare(release, canary, parse_matrix(MATRIX), UPSTREAM)
    assert summary.new == ["parity qwen3_5 fresh none: no row in the canary"]
    assert len(summary.fixed) == 1 and summary.still == []


def test_a_difference_bounded_at_the_release_is_not_new_on_the_branch() -> None:
    """Every known difference ends at the release it was measured on; the branch is past it
    (0.32.3.dev1 from the tags). Graded at its own version, every such row was "new" (1,525
    in one stand-in run). Graded as the release: the same outcome is covered, another error
    is new, and a pass where the release failed as expected is a fix."""
    doc = dict(MATRIX, expectations=[*MATRIX["expectations"], {
        "match": {"check": "parity", "model": "qwen3_5", "subject": "none",
                  "mlx-lm": "<=0.32.2"},
        "verdict": "error", "error": "ValueError: bounded", "reason": "measured on 0.32.2"}])
    bounded = result("parity", "error", "qwen3_5", "fresh", detail="ValueError: bounded")
    release = CellDoc.from_json(cell("mlx-lm-0.32.2", "0.32.2", [bounded]))
    matrix = parse_matrix(doc)
    same = compare(release, CellDoc.from_json(cell("canary", "0.32.3.dev1+gabc", [bounded])),
                   matrix, UPSTREAM)
    assert same.new == [] and same.still == [] and same.fixed == []
    other = result("parity", "error", "qwen3_5", "fresh", detail="KeyError: another")
    changed = compare(release, CellDoc.from_json(cell("canary", "0.32.3.dev1+gabc", [other])),
                      matrix, UPSTREAM)
    assert len(changed.new) == 1 and "qwen3_5" in changed.new[0]
    fixed = compare(release, CellDoc.from_json(cell("canary", "0.32.3.dev1+gabc", [
        result("parity", "pass", "qwen3_5", "fresh")])), matrix, UPSTREAM)
    assert fixed.new == [] and len(fixed.fixed) == 1
    assert same.packages["mlx-lm"] == "0.32.3.dev1+gabc"  # the summary keeps what ran


def test_the_line_says_when_the_branch_needed_a_newer_mlx() -> None:
    release, _ = _docs([])
    moved = cell("canary", "0.33.0.dev3", [result("parity", "pass", "llama", "fresh")])
    moved["env"]["packages"]["mlx"] = "0.33.0"
    line = compare(release, CellDoc.from_json(moved), parse_matrix(MATRIX), UPSTREAM).line
    assert "mlx 0.33.0 (the release cell's 0.32.2 would not install with it: a difference " \
        "may be mlx's)" in line


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
