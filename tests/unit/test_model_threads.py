"""A model our factories build in one thread serves from another (servers generate on a
thread of their own). On mlx >= 0.32 streams are per thread, and an array the factory left
lazy (GLM4V's `model.rotary_emb._inv_freq`) raised "There is no Stream(cpu, N) in current
thread". On older mlx (the `legacy` env) streams are shared and these pass either way."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import pytest

mx = pytest.importorskip("mlx.core")
nn = pytest.importorskip("mlx.nn")

from mlx.utils import tree_flatten  # noqa: E402

from mlxcompat.errors import SkipCheck  # noqa: E402
from mlxcompat.models import lm  # noqa: E402

PROMPT = [5, 6, 7, 8]


def _in_worker(job: Callable[[], Any]) -> Any:
    """`job()` on a fresh thread; its exception, if any, is raised here."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = job()
        except BaseException as exc:
            box["error"] = exc
        finally:  # mlx >= 0.32: a thread frees its own streams, or the process aborts at exit
            getattr(mx, "clear_streams", lambda: None)()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    if "error" in box:
        raise box["error"]
    return box["value"]


def _greedy(model: Any, cache_module: str) -> list[int]:
    cache_mod = importlib.import_module(cache_module)
    for name in ("_rope_deltas", "_position_ids"):  # GLM4V keeps positions between calls
        if name in vars(model):
            setattr(model, name, None)
    cache = [cache_mod.KVCache() for _ in model.layers] if cache_module.startswith(
        "mlx_vlm") else cache_mod.make_prompt_cache(model)
    tokens, step = [], mx.array([PROMPT])
    for _ in range(3):
        out = model(step, cache=cache)
        step = mx.argmax(getattr(out, "logits", out)[:, -1], axis=-1)[:, None]
        tokens.append(int(step.item()))
    return tokens


def test_glm4v_built_in_main_decodes_in_a_worker() -> None:
    glm4v = pytest.importorskip("mlxcompat.models.glm4v")
    pytest.importorskip("mlx_vlm.models.glm4v_moe.language")
    model = glm4v.build_glm4v_language_model(0)
    assert _in_worker(lambda: _greedy(model, "mlx_vlm.models.cache")) == _greedy(
        model, "mlx_vlm.models.cache")


@pytest.mark.parametrize("name", list(lm.LM_CONFIGS))
def test_lm_built_in_main_decodes_in_a_worker(name: str) -> None:
    try:
        model = lm.build_lm(name)
    except SkipCheck as exc:
        pytest.skip(str(exc))
    for _, array in tree_flatten(model):  # every module entry, private ones included
        _in_worker(lambda a=array: mx.eval(a))
    assert _in_worker(lambda: _greedy(model, "mlx_lm.models.cache")) == _greedy(
        model, "mlx_lm.models.cache")
