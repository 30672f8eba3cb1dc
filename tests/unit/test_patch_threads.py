"""Threads racing into our entry points: one applies, the others wait and get its status.

N threads released together by a Barrier call one entry point; every target is then wrapped
exactly once (one journal entry per target, one wrapper deep). The patch's own probe is
slowed down a little so that, without the lock, every thread would be inside it at once.
Runs with whichever releases are installed (`nox -s tests`: newest, and mlx-lm 0.29.1 where
`_make_cache` and `_merge_caches` are wrapped too).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

pytest.importorskip("mlx_lm")

import mlx.core as mx

from mlxcompat.patches import glm4v_moe, glm4v_probe, mamba_cache, ssm_probe
from mlxcompat.registry import build_registry
from mlxcompat.subjects import changed, snapshot

THREADS = 8
ROLES = build_registry().roles
ENTRY_POINTS = {
    "ensure_mamba_support": ("mamba", mamba_cache, "ensure_mamba_support", ssm_probe,
                             "extract_merge"),
    "patch_mlx_lm_for_mamba": ("mamba", mamba_cache, "patch_mlx_lm_for_mamba", ssm_probe,
                               "extract_merge"),
    "ensure_glm4v_support": ("glm4v", glm4v_moe, "ensure_glm4v_support", glm4v_probe,
                             "inner_is_right"),
    "patch_glm4v_moe_for_batching": ("glm4v", glm4v_moe, "patch_glm4v_moe_for_batching",
                                     glm4v_probe, "inner_is_right"),
}


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    mamba_cache.unpatch()
    glm4v_moe.unpatch()
    yield
    mamba_cache.unpatch()
    glm4v_moe.unpatch()


def _slowed(probe: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(probe)
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return probe(*args, **kwargs)

    return slow


def _depth(now: Any, original: Any) -> int:
    """Wrappers between the installed object and the original (classmethods unwrapped)."""
    target, obj, depth = getattr(original, "__func__", original), getattr(now, "__func__", now), 0
    while obj is not target:
        obj, depth = getattr(obj, "__wrapped__", None), depth + 1
        if obj is None:
            return -1  # not a wrapper of the original at all
    return depth


def _race(entry: Callable[[], Any]) -> list[Any]:
    barrier = threading.Barrier(THREADS)
    returned: list[Any] = []

    def call() -> None:
        barrier.wait()
        try:
            returned.append(entry())
        finally:  # mlx >= 0.32: a thread frees its own streams, or the process aborts at exit
            getattr(mx, "clear_streams", lambda: None)()

    threads = [threading.Thread(target=call) for _ in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return returned


@pytest.mark.parametrize("name", list(ENTRY_POINTS))
def test_threads_racing_into_an_entry_point_apply_it_once(
        name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    role, module, func, probe_module, probe = ENTRY_POINTS[name]
    if role == "glm4v":
        pytest.importorskip("mlx_vlm.models.glm4v_moe.language")
    monkeypatch.setattr(probe_module, probe, _slowed(getattr(probe_module, probe)))
    targets = ROLES[role].targets
    before = snapshot(targets)
    returned = _race(getattr(module, func))
    after = snapshot(targets)
    assert len(returned) == THREADS
    assert all(r == returned[0] for r in returned), returned
    touched = changed(before, after)
    assert touched, f"{name} changed nothing: {returned[0]!r}"
    replaced = [key for key in touched if key in before]  # names added (a class) wrap nothing
    depths = {key: _depth(after[key], before.get(key)) for key in replaced}
    assert depths == dict.fromkeys(replaced, 1), depths
    assert len(module._journal._entries) == len(touched)
    module.unpatch()
    assert changed(before, snapshot(targets)) == []
