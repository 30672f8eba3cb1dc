"""Defect: a GLM4V model built on one thread cannot be used from another (issue 24).

Bare: stdlib, mlx, mlx_vlm and our model factory module (`mlxcompat.models.glm4v`), no
harness. The model is built in the main thread; a worker thread (a server's generation
thread) then evaluates each array the module tree holds that is not a parameter, and decodes
greedily with a plain KVCache. On mlx >= 0.32 an array left lazy by the factory belongs to
the main thread's stream and cannot be evaluated from the worker.

    PYTHONPATH=src python scripts/repro/model_across_threads.py
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

import mlx.core as mx
import mlx.nn as nn
from mlx.utils import tree_flatten

from mlxcompat.models.glm4v import build_glm4v_language_model

PROMPT = [1, 2, 3, 4]


def private_arrays(module: nn.Module) -> list[tuple[str, Any]]:
    """Arrays in the module tree that `parameters()` leaves out (names starting with _)."""
    params = {id(a) for _, a in tree_flatten(module.parameters())}
    return [(k, a) for k, a in tree_flatten(module) if isinstance(a, mx.array)
            and id(a) not in params]


def greedy(model: Any) -> list[int]:
    cache_mod = importlib.import_module("mlx_vlm.models.cache")
    model._rope_deltas, model._position_ids = None, None
    cache = [cache_mod.KVCache() for _ in model.layers]
    tokens, step = [], mx.array([PROMPT])
    for _ in range(4):
        out = model(step, cache=cache)
        logits = getattr(out, "logits", out)
        step = mx.argmax(logits[:, -1], axis=-1)[:, None]
        tokens.append(int(step.item()))
    return tokens


def in_worker(job: Callable[[], Any]) -> Any:
    box: list[Any] = []

    def run() -> None:
        try:
            box.append(job())
        except Exception as exc:
            box.append(f"{type(exc).__name__}: {exc}")
        finally:  # mlx >= 0.32: a thread frees its own streams, or the process aborts at exit
            getattr(mx, "clear_streams", lambda: None)()

    worker = threading.Thread(target=run)
    worker.start()
    worker.join()
    return box[0]


def main() -> None:
    print(f"mlx {mx.__version__}, mlx-vlm {importlib.import_module('mlx_vlm').__version__}")
    model = build_glm4v_language_model(0)
    for name, array in private_arrays(model):
        print(f"  worker evaluates {name} {tuple(array.shape)}:",
              in_worker(lambda a=array: mx.eval(a) or "ok"))
    print("  built in main, decoded in a worker:", in_worker(lambda: greedy(model)))
    print("  built in main, decoded in main:    ", greedy(model))
    print("  built and decoded in a worker:     ",
          in_worker(lambda: greedy(build_glm4v_language_model(0))))


if __name__ == "__main__":
    main()
