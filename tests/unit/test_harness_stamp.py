"""The harness identity every cell records: a checkout's commit, or the stamp a copy of the
tree without git carries (scripts/gpu: `run_cell.sh stamp` here, the machine reads it)."""

from __future__ import annotations

import re

import pytest

from mlxcompat.installs import harness_identity


def test_a_checkout_names_its_commit_and_a_carried_stamp_wins(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLXCOMPAT_HARNESS_STAMP", raising=False)
    # the commit where this module sits in a checkout; the version alone where installed
    assert re.fullmatch(r"mlxcompat \S+( \(git [0-9a-f]{12}( \+ local changes)?\))?",
                        harness_identity())
    monkeypatch.setenv("MLXCOMPAT_HARNESS_STAMP", "mlxcompat 0.1.0 (git 0123456789ab)")
    assert harness_identity() == "mlxcompat 0.1.0 (git 0123456789ab)"
