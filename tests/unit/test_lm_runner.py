"""The batched runner stops on a generator that drops a row instead of spinning until the
cell's budget; the stalled row is named."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("mlx_lm")

from mlxcompat.drivers import lm_runner


class _Scores:
    def astype(self, _dtype):
        return np.zeros(4, dtype=np.float32)


class DropsARow:
    """Answers for every row but the second, forever (as a broken filter would)."""

    def __init__(self) -> None:
        self.uids: list[int] = []
        self.calls = 0

    def insert(self, prompts, max_tokens=None, caches=None):
        start = len(self.uids)
        self.uids += list(range(start, start + len(prompts)))
        return self.uids[start:]

    def next(self):
        self.calls += 1
        return [SimpleNamespace(uid=u, token=1, logprobs=_Scores(), finish_reason=None)
                for u in self.uids if u != 1]

    def close(self):
        pass


def test_a_dropped_row_stops_the_run_and_is_left_unfinished(monkeypatch):
    fake = DropsARow()
    monkeypatch.setattr(lm_runner, "new_batch_generator", lambda model, **kw: fake)
    rows = [lm_runner.Row([1, 2], 3), lm_runner.Row([3, 4], 3)]
    outputs = lm_runner.run_batched(object(), rows)
    assert outputs[1].finish_reason is None and outputs[1].tokens == []
    assert fake.calls <= sum(r.max_tokens for r in rows) + 4 * len(rows) + lm_runner.MAX_EMPTY_STEPS


class _Net:
    """A model stand-in whose single decode is its own number."""

    def __init__(self, n: int) -> None:
        self.n = n


def test_the_oracle_of_a_new_model_is_never_a_freed_models(monkeypatch):
    """A regression: singles were cached by id(model), and CPython hands a freed model's id
    to the next one, so the probe's Mamba oracle once graded a later test's Mamba run."""
    calls = []

    def decode(model, tokens, max_tokens):
        calls.append(model.n)
        return lm_runner.RowOutput([model.n] * max_tokens, [], "length")

    monkeypatch.setattr(lm_runner, "_decode_alone", decode)
    row = lm_runner.Row(prompt=[1, 2, 3], max_tokens=4)
    seen_ids = set()
    for n in range(50):  # freed ids are reused at once; the last one proves it
        net = _Net(n)
        seen_ids.add(id(net))
        assert lm_runner.run_single(net, row).tokens == [n] * 4
        assert lm_runner.run_single(net, row).tokens == [n] * 4  # second call: cached
        del net
    assert calls == list(range(50))
    assert len(seen_ids) < 50, "ids were never reused: the regression was not exercised"
