"""The shapes, prompt-cache and dtype checks on the installed mlx-lm (a tiny llama and Mamba
v1; no patch): their rows are what they say, and each can fail."""

from __future__ import annotations

import pytest

from mlxcompat.checks.shapes import MODES, shape_rows

pytest.importorskip("mlx_lm")


def test_shape_modes_are_the_shapes_they_name() -> None:
    rows, options = shape_rows("long-prompt")
    assert max(len(r.prompt) for r in rows) == 300 and options["prefill_step_size"] == 64
    assert all(len(r.prompt) % 64 for r in rows)
    wide, _ = shape_rows("wide")
    assert len(wide) == 16 and len({r.max_tokens for r in wide}) > 4
    same, _ = shape_rows("same-finish")
    assert len({r.max_tokens for r in same}) == 1 and len({len(r.prompt) for r in same}) == 8
    lone, _ = shape_rows("lone-history")
    assert len(lone) == 1 and lone[0].history
    cancel, _ = shape_rows("cancel")
    assert [i for i, r in enumerate(cancel) if r.remove_after] == [1, 4]
    assert set(MODES) == {"long-prompt", "wide", "same-finish", "lone-history", "cancel"}


def _ctx():
    from mlxcompat.checks.spec import Context
    from mlxcompat.registry import build_registry

    return Context("none", build_registry(), 1e-4)


def test_removed_rows_stop_and_the_others_match_alone() -> None:
    from mlxcompat.checks.shapes import run_shapes
    from mlxcompat.checks.spec import Case

    row = run_shapes(Case("shapes", model="llama", mode="cancel"), _ctx())
    assert row.verdict == "pass", row.detail
    assert row.metrics["removed_rows"] == [1, 4]
    assert row.metrics["tokens_per_row"][1] == 2 and row.metrics["tokens_per_row"][4] == 3


def test_prompt_cache_round_trips_pass_on_attention_and_a_lossy_load_fails(monkeypatch) -> None:
    from mlxcompat.checks import prompt_cache
    from mlxcompat.checks.spec import Case
    from mlxcompat.drivers import lm_prompt_cache

    case = Case("prompt-cache", model="llama", scenario="extracted-row")
    assert prompt_cache.run_prompt_cache(case, _ctx()).verdict == "pass"
    real = lm_prompt_cache.saved_and_loaded

    def lossy(cache):
        loaded = real(cache)
        for c in loaded:
            c.offset -= 1  # the last position is lost
        return loaded

    monkeypatch.setattr(lm_prompt_cache, "saved_and_loaded", lossy)
    row = prompt_cache.run_prompt_cache(case, _ctx())
    assert row.verdict == "fail" and "save-load" in str(row.metrics["compared"])


def test_a_cache_that_changes_dtype_fails(monkeypatch) -> None:
    from mlxcompat.checks import dtypes
    from mlxcompat.checks.spec import Case

    case = Case("dtype-cache", model="llama", scenario="extract-merge", dtype="bfloat16")
    assert dtypes.run_dtype_cache(case, _ctx()).verdict == "pass"
    floating = dtypes._floating
    calls = []

    def upcast(cache):
        calls.append(1)
        return floating(cache) | ({"float32"} if len(calls) == 2 else set())  # the merged one

    monkeypatch.setattr(dtypes, "_floating", upcast)
    row = dtypes.run_dtype_cache(case, _ctx())
    assert row.verdict == "fail" and "merged ['bfloat16', 'float32']" in row.detail
