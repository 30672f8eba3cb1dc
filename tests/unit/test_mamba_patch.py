"""The Mamba cache patch is idempotent, reversible by identity, and decides by capability.

Runs against whichever mlx-lm is installed: `nox -s tests` runs it with the newest release
(where the patch must step aside) and with an old one (where it must apply).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

pytest.importorskip("mlx_lm")

from mlxcompat.drivers.capabilities import probe_lm
from mlxcompat.patches import mamba_cache
from mlxcompat.registry import build_registry
from mlxcompat.subjects import changed, snapshot

TARGETS = build_registry().roles["mamba"].targets


@pytest.fixture(autouse=True)
def _clean() -> Iterator[None]:
    mamba_cache.unpatch()
    yield
    mamba_cache.unpatch()


def test_second_ensure_call_changes_nothing() -> None:
    first = mamba_cache.ensure_mamba_support()
    after_first = snapshot(TARGETS)
    second = mamba_cache.ensure_mamba_support()
    assert second is first
    assert changed(after_first, snapshot(TARGETS)) == []


def test_ensure_decides_by_capability() -> None:
    decision, why = probe_lm().ssm_patch_decision()
    status = mamba_cache.ensure_mamba_support()
    assert status.status == {"needed": "applied"}.get(decision, decision)
    if decision != "needed":
        assert status.detail == why


def test_unpatch_restores_every_original_by_identity() -> None:
    before = snapshot(TARGETS)
    status = mamba_cache.patch_mlx_lm_for_mamba()
    if status.status != "applied":
        pytest.skip(f"forced patch cannot apply on this mlx-lm: {status.detail}")
    assert changed(before, snapshot(TARGETS))
    mamba_cache.patch_mlx_lm_for_mamba()
    mamba_cache.unpatch()
    assert changed(before, snapshot(TARGETS)) == []


def test_batch_cache_round_trip_extract_merge() -> None:
    import mlx.core as mx

    rows = []
    for k in range(3):
        single = mamba_cache._single(2)
        single.cache = [mx.full((1, 3, 4), float(k)), mx.full((1, 2), float(k))]
        rows.append(single)
    rows.append(mamba_cache._single(2))
    merged = mamba_cache.BatchMambaCache.merge(rows)
    assert merged.cache[0].shape == (4, 3, 4)
    assert merged.cache[1][3].tolist() == [0.0, 0.0]
    back = merged.extract(2)
    assert back.cache[0].tolist() == rows[2].cache[0].tolist()
    assert not isinstance(back, mamba_cache.BatchMambaCache)


def test_prepare_refuses_unequal_right_padding() -> None:
    cache = mamba_cache.BatchMambaCache([0, 0])
    cache.prepare(lengths=[3, 3], right_padding=[0, 0])
    with pytest.raises(ValueError, match="unequal prompt tails"):
        cache.prepare(lengths=[3, 1], right_padding=[0, 2])
