"""The walker behind `evaluate_all`: every array a module tree holds, private entries and
plain helper objects included, is found and evaluated (so any thread can use it)."""

from __future__ import annotations

import pytest

mx = pytest.importorskip("mlx.core")
nn = pytest.importorskip("mlx.nn")

from mlx.utils import tree_flatten  # noqa: E402
from test_model_threads import _in_worker  # noqa: E402

from mlxcompat.models.evaluate import evaluate_all, held_arrays  # noqa: E402


class _Holder:
    def __init__(self) -> None:
        self.table = mx.arange(3) * 2


class _Tiny(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(2, 2)
        self._freqs = mx.arange(4) / 4  # private: parameters() leaves it out
        self.helper = _Holder()  # not a Module: its arrays are plain attributes


def test_every_held_array_is_found_and_evaluated() -> None:
    tiny = _Tiny()
    names = {name for name, _ in held_arrays(tiny)}
    assert {"linear.weight", "linear.bias", "_freqs", "helper.table"} <= names
    assert "_freqs" not in dict(tree_flatten(tiny.parameters()))
    evaluate_all(tiny)
    for _, array in held_arrays(tiny):
        _in_worker(lambda a=array: mx.eval(a))
