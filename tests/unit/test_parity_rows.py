"""The requests of each parity mode: always prompts of different lengths, and each mode
exercises what its name says (joins, leaves, history, mixed rows)."""

from __future__ import annotations

import pytest

pytest.importorskip("mlx_lm")

from mlxcompat.checks.parity import MODES, parity_rows


@pytest.mark.parametrize("mode", MODES)
def test_every_mode_has_four_rows_of_different_prompt_lengths(mode: str) -> None:
    rows = parity_rows(mode)
    assert len(rows) == 4
    totals = [len(r.prompt) + len(r.history or []) for r in rows]
    assert len(set(totals)) > 1, totals
    assert parity_rows(mode) == rows  # seeded: the same requests every run


def test_each_mode_exercises_its_operation() -> None:
    assert {r.join_after for r in parity_rows("staggered")} == {0, 2}
    assert len({r.max_tokens for r in parity_rows("leave")}) == 4
    history = parity_rows("history")
    assert all(r.history for r in history) and len({len(r.prompt) for r in history}) == 4
    assert {len(r.prompt) for r in parity_rows("history-equal")} == {3}
    assert [bool(r.history) for r in parity_rows("history-mixed")] == [True, False, True, False]
    assert [bool(r.history) for r in parity_rows("history-single")] == [False, False, True,
                                                                       False]
    join = parity_rows("history-join")
    assert [(bool(r.history), r.join_after) for r in join] == [(False, 0), (False, 0),
                                                               (True, 2), (True, 2)]


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown parity mode"):
        parity_rows("fresh-ish")
