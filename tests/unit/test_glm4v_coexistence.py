"""Our GLM4V patch beside vllm-mlx 0.6.0's real one, in one process, in both orders.

vllm-mlx is installed the way subjects are (`--no-deps --target DIR`); MLXCOMPAT_VLLM_MLX
names DIR and only its GLM4V patch module is imported (mlx and mlx_vlm only). `nox -s tests`
installs it and sets MLXCOMPAT_REQUIRE_VLLM_MLX=1, so there a missing package fails these
tests; elsewhere they skip with the reason.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

language = pytest.importorskip("mlx_vlm.models.glm4v_moe.language")

from mlxcompat.checks.glm4v import run_scenario  # noqa: E402
from mlxcompat.models.glm4v import build_glm4v_language_model  # noqa: E402
from mlxcompat.patches import glm4v_moe as ours  # noqa: E402

MODEL, OUTER = language.GLM4VModel, language.LanguageModel
UPSTREAM = {cls: vars(cls)["__call__"] for cls in (MODEL, OUTER)}


def inner_batches_right() -> bool:
    """The harness's own GLM4V check on the inner path, with whatever is installed now: rows
    filtered out of a padded batch keep decoding as they would alone."""
    lm = build_glm4v_language_model(0)
    return run_scenario(lm, "filter", "inner", 1e-4).verdict == "pass"


def _vllm_mlx() -> ModuleType:
    folder = os.environ.get("MLXCOMPAT_VLLM_MLX", "")
    try:
        if not folder:
            raise ImportError("MLXCOMPAT_VLLM_MLX is not set")
        sys.path.insert(0, folder)
        try:
            module = importlib.import_module("vllm_mlx.patches.glm4v_moe_mllm")
        finally:
            sys.path.remove(folder)
        assert importlib.import_module("vllm_mlx").__version__ == "0.6.0"
        return module
    except ImportError as exc:
        why = f"vllm-mlx 0.6.0 is not importable ({exc}); `nox -s tests` installs it"
        if os.environ.get("MLXCOMPAT_REQUIRE_VLLM_MLX") == "1":
            pytest.fail(why)
        pytest.skip(why)


@pytest.fixture
def vllm() -> Iterator[ModuleType]:
    module = _vllm_mlx()
    ours.unpatch()
    yield module
    ours.unpatch()
    for cls, original in UPSTREAM.items():  # vllm-mlx offers no unpatch
        cls.__call__ = original
    if "_batch_patched" in vars(MODEL):
        del MODEL._batch_patched


def test_vllm_mlx_over_ours_is_reported_and_kept_by_our_unpatch(vllm: ModuleType) -> None:
    assert ours.ensure_glm4v_support().status == "applied"
    assert vllm.patch_glm4v_moe_for_batching() is True
    theirs = vars(MODEL)["__call__"]
    assert theirs.__module__ == vllm.__name__  # it replaced our inner wrapper outright
    assert not inner_batches_right()  # the harness's own check: rows misplaced after filter

    status = ours.glm4v_patch_status()
    assert status.status == "replaced", status
    assert "GLM4VModel.__call__ now holds" in status.detail and vllm.__name__ in status.detail
    assert not status
    assert ours.ensure_glm4v_support() == status  # a later apply changes nothing
    assert vars(MODEL)["__call__"] is theirs
    assert ours.patch_glm4v_moe_for_batching() is False

    ours.unpatch()
    assert vars(MODEL)["__call__"] is theirs  # vllm-mlx's patch is still what it installed
    assert vars(MODEL).get("_batch_patched") is True
    assert vars(OUTER)["__call__"] is UPSTREAM[OUTER]  # ours, still installed, came off


def test_ours_over_vllm_mlx_wraps_it_and_unpatch_gives_it_back(vllm: ModuleType) -> None:
    assert vllm.patch_glm4v_moe_for_batching() is True
    theirs = vars(MODEL)["__call__"]
    assert not inner_batches_right()

    status = ours.ensure_glm4v_support()
    assert status.status == "applied", status
    assert "over patch_glm4v_moe_for_batching.<locals>._patched_call" in status.detail
    assert vars(MODEL)["__call__"].__wrapped__ is theirs
    assert inner_batches_right()  # our positions and mask pass through theirs
    assert vars(MODEL)["_batch_patched"] is True

    ours.unpatch()
    assert vars(MODEL)["__call__"] is theirs
    assert vars(MODEL).get("_batch_patched") is True
    assert vars(OUTER)["__call__"] is UPSTREAM[OUTER]
