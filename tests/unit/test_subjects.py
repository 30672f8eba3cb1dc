import sys
from pathlib import Path

import pytest

from mlxcompat import subjects
from mlxcompat.drivers import targets

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def no_targets(monkeypatch):
    """Pretend the release has none of the role's targets, so tests need no mlx."""
    monkeypatch.setitem(targets.TARGETS, "fake", ())


def _apply(name):
    return subjects.apply_entry_point("s", "fake", f"fake_entry_points:{name}")


def test_status_object_is_taken_as_returned(no_targets):
    row = _apply("returns_status")
    assert (row["status"], row["detail"].split(";")[0]) == ("skipped", "native")


def test_log_only_entry_point_is_recorded_with_its_log(no_targets):
    row = _apply("logs_only")
    assert row["status"] == "not-applicable"
    assert row["log"] == ["nothing to do"]


def test_raising_entry_point_is_error(no_targets):
    row = _apply("raises")
    assert row["status"] == "error"
    assert "RuntimeError: boom" in row["detail"]


def test_missing_module_is_unavailable():
    row = subjects.apply_entry_point("s", "fake", "no_such_module_xyz:f")
    assert row["status"] == "unavailable"


def test_replacement_is_observed_by_identity(monkeypatch):
    holder = type("Holder", (), {"target": staticmethod(lambda: 1)})
    mod = type(sys)("fake_target_module")
    mod.Holder = holder
    monkeypatch.setitem(sys.modules, "fake_target_module", mod)
    monkeypatch.setitem(targets.TARGETS, "fake", (("fake_target_module", "Holder.target"),))

    def patcher():
        holder.target = staticmethod(lambda: 2)

    mod.patcher = patcher
    row = subjects.apply_entry_point("s", "fake", "fake_target_module:patcher")
    assert row["status"] == "applied"
    assert "fake_target_module:Holder.target" in row["detail"]
