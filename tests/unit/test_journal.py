"""The journal: once-only replacement, identity-based standing, undo that leaves another
patch's objects alone, atomic groups, and threads racing into one attribute."""

from __future__ import annotations

import threading
import time

import pytest

from mlxcompat.patches.journal import Journal
from mlxcompat.patches.status import replaced


def _upstream(self):  # the "release's" method
    return "upstream"


def _other(self):  # another server's patch
    return "other"


def _wrap(original):
    def call(self):
        return "ours+" + original(self)

    call.__wrapped__ = original
    return call


class Target:
    __call__ = _upstream


@pytest.fixture
def journal():
    journal = Journal()
    yield journal
    journal.undo()
    Target.__call__ = _upstream
    for name in ("_batch_patched", "added"):
        if name in vars(Target):
            delattr(Target, name)


def test_an_attribute_is_never_replaced_twice(journal: Journal) -> None:
    assert journal.wrap(Target, "__call__", _wrap) is True
    ours = vars(Target)["__call__"]
    assert journal.wrap(Target, "__call__", _wrap) is False
    assert journal.replace(Target, "__call__", _other) is False
    assert vars(Target)["__call__"] is ours and ours.__wrapped__ is _upstream
    assert len(journal) == 1


def test_threads_racing_into_one_attribute_wrap_it_once(journal: Journal) -> None:
    barrier = threading.Barrier(8)

    def slow_wrap(original):
        time.sleep(0.02)  # a wide window between reading the attribute and setting it
        return _wrap(original)

    def race() -> None:
        barrier.wait()
        journal.wrap(Target, "__call__", slow_wrap)

    threads = [threading.Thread(target=race) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(journal) == 1
    assert vars(Target)["__call__"].__wrapped__ is _upstream  # one layer deep


def test_standing_is_read_from_the_target_by_identity(journal: Journal) -> None:
    journal.wrap(Target, "__call__", _wrap)
    assert [s for _, s in journal.standings()] == ["ours"]
    assert replaced("t", journal) is None
    Target.__call__ = _other
    assert [s for _, s in journal.standings()] == ["foreign"]
    status = replaced("t", journal)
    assert status is not None and status.status == "replaced" and not status
    assert "Target.__call__ now holds _other" in status.detail
    Target.__call__ = _upstream
    assert [s for _, s in journal.standings()] == ["restored"]


def test_undo_leaves_another_patch_and_its_marker_alone(journal: Journal) -> None:
    journal.wrap(Target, "__call__", _wrap)
    journal.replace(Target, "added", 1)
    Target.__call__, Target._batch_patched = _other, True  # another server patches on top
    assert journal.undo() == ["Target.__call__"]
    assert vars(Target)["__call__"] is _other and Target._batch_patched is True
    assert "added" not in vars(Target)
    assert not journal


def test_undo_gives_back_the_patch_we_wrapped(journal: Journal) -> None:
    Target.__call__ = _other
    journal.wrap(Target, "__call__", _wrap)
    assert Target()() == "ours+other"
    journal.undo()
    assert vars(Target)["__call__"] is _other


def test_atomic_group_that_raises_is_undone(journal: Journal) -> None:
    with pytest.raises(RuntimeError), journal.atomic():
        journal.wrap(Target, "__call__", _wrap)
        journal.replace(Target, "added", 1)
        raise RuntimeError("half-way")
    assert vars(Target)["__call__"] is _upstream and "added" not in vars(Target)
    assert not journal
