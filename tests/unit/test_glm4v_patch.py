"""The GLM4V patch is reversible, idempotent and reports its status in DESIGN's vocabulary."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mlx_vlm")
language = pytest.importorskip("mlx_vlm.models.glm4v_moe.language")

from mlxcompat.patches import glm4v_moe as patch  # noqa: E402

TARGETS = (language.GLM4VModel, language.LanguageModel)


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    patch.unpatch()
    yield
    patch.unpatch()


def _calls() -> list[object]:
    return [cls.__dict__.get("__call__") for cls in TARGETS]


def test_unpatch_restores_originals_by_identity() -> None:
    before = _calls()
    names = [set(vars(cls)) for cls in TARGETS]
    status = patch.ensure_glm4v_support()
    if status.status == "applied":
        assert any(a is not b for a, b in zip(_calls(), before, strict=True))
    patch.unpatch()
    assert all(a is b for a, b in zip(_calls(), before, strict=True))
    assert [set(vars(cls)) for cls in TARGETS] == names  # no marker or attribute left behind


def test_second_patch_call_is_a_no_op() -> None:
    assert patch.patch_glm4v_moe_for_batching() is True
    first = _calls()
    assert patch.patch_glm4v_moe_for_batching() is True
    assert all(a is b for a, b in zip(_calls(), first, strict=True))


def test_wrapped_body_still_names_upstream_original() -> None:
    from mlxcompat.drivers.glm4v import call_body_digest

    digest = call_body_digest()
    patch.ensure_glm4v_support()
    assert call_body_digest() == digest


def test_status_before_and_after() -> None:
    before = patch.glm4v_patch_status()
    assert before.patch == "glm4v"
    assert before.status in ("skipped", "error")
    after = patch.ensure_glm4v_support()
    assert after.status in ("applied", "skipped")
    assert after == patch.glm4v_patch_status()
    assert bool(after)
    patch.unpatch()
    assert patch.glm4v_patch_status() == before


def test_status_without_mlx_vlm(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patch, "_language_module", lambda: None)
    monkeypatch.setattr(patch, "_vlm_installed", lambda: False)
    assert patch.patch_glm4v_moe_for_batching() is False
    assert patch.glm4v_patch_status().status == "not-applicable"


def test_status_without_glm4v_module(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patch, "_language_module", lambda: None)
    monkeypatch.setattr(patch, "_vlm_installed", lambda: True)
    assert patch.ensure_glm4v_support().status == "not-applicable"


def test_error_is_reported_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_args: object) -> bool:
        raise RuntimeError("probe exploded")

    monkeypatch.setattr(patch, "_needed", boom)
    status = patch.ensure_glm4v_support()
    assert status.status == "error"
    assert "RuntimeError: probe exploded" in status.detail
    assert not bool(status)


def test_merge_compares_only_steps_made_by_the_batch() -> None:
    """The merge scenario's first logits come from each row's own prefill: never compared."""
    from mlxcompat.checks import glm4v as check

    class Runner:
        def merge(self, prompts):
            import mlx.core as mx

            return mx.zeros((len(prompts), 4))

        def step(self, tokens):
            import mlx.core as mx

            return mx.ones((len(tokens), 4))

    _prompts, rows = check._merge(Runner())
    assert check.FIRST_STEP["merge"] == 1
    assert all(len(v) == check.STEPS for v in rows.values())
    assert all(float(v[0].sum()) == 4.0 for v in rows.values())  # a batched step, not prefill
