"""process-state: what an entry point changed beyond its targets is observed and judged."""

import logging
import os
import sys
from pathlib import Path

import pytest

from mlxcompat import subjects
from mlxcompat.checks.process_state import run_process_state
from mlxcompat.checks.spec import Case, Context
from mlxcompat.registry import RoleDecl, build_registry

mx = pytest.importorskip("mlx.core")
sys.path.insert(0, str(Path(__file__).parent))
ROLE = RoleDecl("mamba", ("fake_target",), ("parity",), ())


def _row(point: str):
    row = subjects.apply_entry_point("s", ROLE, point)
    ctx = Context("s", build_registry(), 1e-4, patches={"mamba": row})
    return row, run_process_state(Case("process-state", role="mamba"), ctx)


def test_an_entry_point_that_reseeds_fails_and_names_the_key() -> None:
    mx.random.seed(1234)
    row, result = _row("fake_entry_points:reseeds")
    assert result.verdict == "fail" and "mlx's random key" in result.detail
    assert row.process is not None and row.process.random_key[0] != row.process.random_key[1]


def test_environ_and_logging_changes_are_named(monkeypatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_FAKE_PATCHED", raising=False)
    level = logging.getLogger().level
    try:
        _, result = _row("fake_entry_points:touches_process_state")
    finally:
        logging.getLogger().setLevel(level)
        os.environ.pop("MLXCOMPAT_FAKE_PATCHED", None)
    assert result.verdict == "fail"
    assert "os.environ MLXCOMPAT_FAKE_PATCHED: added" in result.detail
    assert "logging (root): level" in result.detail


def test_an_entry_point_that_changes_nothing_passes_and_its_imports_are_recorded() -> None:
    _, result = _row("fake_entry_points:logs_only")
    assert result.verdict == "pass", result.detail
    assert "imported" in result.detail


def test_our_mamba_patch_keeps_the_servers_seed() -> None:
    """The RNG fix, shown: a server seeds, applies ensure_mamba_support(), then draws; the
    draws are what its seed gives, and the check observes the key unchanged."""
    pytest.importorskip("mlx_lm")
    role = RoleDecl("mamba", ("mlx_lm.generate", "mlx_lm.models.cache"), ("parity",), ())
    mx.random.seed(1234)
    want = mx.random.uniform(shape=(4,)).tolist()
    mx.random.seed(1234)
    row = subjects.apply_entry_point(
        "mlxcompat", role, "mlxcompat.patches.mamba_cache:ensure_mamba_support")
    try:
        assert row.process is not None and row.process.changes() == [], row.process
        assert mx.random.uniform(shape=(4,)).tolist() == want
    finally:
        from mlxcompat.patches import mamba_cache

        mamba_cache.unpatch()


def test_a_change_to_mlx_core_outside_the_targets_is_recorded_not_judged() -> None:
    try:
        row, result = _row("fake_entry_points:marks_mlx_core")
    finally:
        if hasattr(mx, "_mlxcompat_fake_shim"):
            del mx._mlxcompat_fake_shim
    assert row.process is not None
    assert row.process.beyond_targets == ["mlx.core:_mlxcompat_fake_shim added"]
    assert result.verdict == "pass"
    assert "outside its role's targets: mlx.core:_mlxcompat_fake_shim added" in result.detail
