"""A subject's status comes from observation, never from what its entry point says."""

import sys
import types
from pathlib import Path

import pytest

from mlxcompat import subjects
from mlxcompat.registry import RoleDecl

sys.path.insert(0, str(Path(__file__).parent))
ROLE = RoleDecl("mamba", ("fake_target",), ("parity",), ())


@pytest.fixture(autouse=True)
def fake_target(monkeypatch):
    mod = types.ModuleType("fake_target")

    class Cache:
        def extract(self, i):
            return None

    Cache.__module__ = "fake_target"
    mod.Cache = Cache
    mod.helper = lambda: "original"
    monkeypatch.setitem(sys.modules, "fake_target", mod)
    import fake_entry_points

    fake_entry_points._saved.clear()
    return mod


def _apply(name):
    return subjects.apply_entry_point("s", ROLE, f"fake_entry_points:{name}")


def test_self_report_is_recorded_beside_the_observation():
    row = _apply("returns_status")
    assert (row.observed, row.claim, row.agrees) == ("skipped", ["skipped"], True)


def test_claiming_applied_while_patching_nothing_disagrees():
    row = _apply("claims_applied_patches_nothing")
    assert row.observed == "skipped" and row.agrees is False


def test_in_place_method_replacement_counts_as_applied():
    row = _apply("in_place_method")
    assert row.observed == "applied"
    assert "fake_target:Cache.extract" in row.changed


def test_log_only_entry_point_is_skipped_with_its_log():
    row = _apply("logs_only")
    assert row.observed == "skipped" and row.log == ["nothing to do"]


def test_missing_module_is_an_import_error():
    row = subjects.apply_entry_point("s", ROLE, "no_such_module_xyz:f")
    assert (row.observed, row.imported) == ("error", False)
    assert "No module named 'no_such_module_xyz'" in row.detail


def test_raising_entry_point_that_changed_something_is_half_applied():
    row = _apply("raises_half_applied")
    assert row.observed == "error"
    assert row.idempotence.left_changed == ["fake_target:helper"]


def test_a_second_call_that_wraps_again_is_recorded():
    row = _apply("wraps_every_call")
    assert row.idempotence.second_call_changed == ["fake_target:helper"]


def test_unpatch_restores_and_reapply_changes_the_same_targets(fake_target):
    original = fake_target.helper
    row = _apply("reversible")
    rec = row.idempotence
    assert rec.unpatch_offered is True and rec.not_restored == [] and rec.reapply_differs == []
    assert rec.second_call_changed == []
    assert fake_target.helper is not original  # re-applied after the round trip


def test_no_target_module_is_not_applicable():
    role = RoleDecl("glm4v", ("no_such_target_module_xyz",), ("glm4v",), ())
    row = subjects.apply_entry_point("s", role, "fake_entry_points:logs_only")
    assert row.observed == "not-applicable"
