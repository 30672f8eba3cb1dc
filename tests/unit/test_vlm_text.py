"""mlx-vlm's qwen3_5 and gemma4 language models: built from a config, non-degenerate, served
from another thread, batched through their own cache kinds (drivers/vlm_text.py)."""

from __future__ import annotations

import pytest

mx = pytest.importorskip("mlx.core")
pytest.importorskip("mlx_vlm")

from test_model_threads import _in_worker  # noqa: E402

from mlxcompat.checks.vlm import run_vlm_scenario  # noqa: E402
from mlxcompat.drivers.vlm_text import batch_cache, run_single, single_caches  # noqa: E402
from mlxcompat.errors import SkipCheck  # noqa: E402
from mlxcompat.models import vlm_text  # noqa: E402

MODELS = ("qwen3_5_vlm", "gemma4_vlm")
PROMPT = [5, 17, 42, 9, 3, 77, 21, 64]


def _build(name: str):
    try:
        return getattr(vlm_text, name)(0)
    except SkipCheck as exc:
        pytest.skip(str(exc))


@pytest.mark.parametrize("name", MODELS)
def test_the_tiny_model_does_not_echo_its_input(name: str) -> None:
    lm = _build(name)
    logits = run_single(lm, PROMPT, 4)
    tokens = [int(mx.argmax(x).item()) for x in logits]
    assert len(set(tokens)) > 1 and tokens[0] != PROMPT[-1]


@pytest.mark.parametrize("name", MODELS)
def test_it_serves_from_another_thread(name: str) -> None:
    lm = _build(name)
    here = [mx.argmax(x).item() for x in run_single(lm, PROMPT, 3)]
    assert _in_worker(lambda: [mx.argmax(x).item() for x in run_single(lm, PROMPT, 3)]) == here


@pytest.mark.parametrize("name", MODELS)
def test_each_layer_gets_the_batch_form_of_its_own_cache(name: str) -> None:
    lm = _build(name)
    kinds = {type(c).__name__: type(batch_cache(c, [2, 0])).__name__ for c in single_caches(lm)}
    expected = {"KVCache": "BatchKVCache", "RotatingKVCache": "BatchRotatingKVCache",
                "ArraysCache": "ArraysCache"}
    assert kinds and all(expected[k] == v for k, v in kinds.items())


@pytest.mark.parametrize("name", MODELS)
def test_equal_rows_batched_are_each_row_alone(name: str) -> None:
    found = run_vlm_scenario(_build(name), "equal", 1e-4)
    assert found.verdict == "pass", found.detail
