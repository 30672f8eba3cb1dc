"""`bisect --axis subject`: a family's releases on one cell; a release whose entry points'
modules are identical to a visited one's takes its finding without a run."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from mlxcompat import bisect_subjects
from mlxcompat.bisect_subjects import SubjectBisect
from mlxcompat.matrix import parse_matrix
from mlxcompat.records.lock import PackageReleases, ReleaseLock

DOC = {"schema": 3,
       "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
       "subjects": {"none": {}, "srv": {"package": "srv", "versions": "all",
                                        "entry_points": {"mamba": {"entry": "srv.p:f",
                                                                   "releases": ">=0.2"}}}},
       "cells": [{"mlx-lm": "0.30.5", "mlx": "0.30.3", "subjects": ["none"]}]}
LOCK = ReleaseLock(packages={"srv": PackageReleases(versions=["0.1", "0.2", "0.3"])})


def _bisect(tmp_path: Path) -> SubjectBisect:
    matrix = parse_matrix(copy.deepcopy(DOC), lock=LOCK)
    return SubjectBisect(matrix, "patch-status", "", {"role": "mamba"}, "srv", tmp_path,
                         tmp_path / "noxfile.py", "subject", cell="mlx-lm-0.30.5")


def test_the_generated_matrix_has_the_cell_and_one_subject_per_release(tmp_path: Path) -> None:
    b = _bisect(tmp_path)
    doc = yaml.safe_load(b.write_matrix(["0.1", "0.2"], tmp_path).read_text())
    (cell,) = doc["cells"]
    assert (cell["id"], cell["mlx-lm"], cell["subjects"]) == ("mlx-lm-0.30.5", "0.30.5",
                                                              ["srv-0.1", "srv-0.2"])
    assert doc["subjects"]["srv-0.1"] == {"install": ["srv==0.1"], "entry_points": {}}
    assert doc["subjects"]["srv-0.2"]["entry_points"] == {"mamba": "srv.p:f"}


def test_identical_modules_take_the_visited_finding_without_a_run(tmp_path, monkeypatch):
    b = _bisect(tmp_path)
    b.keys = {"0.2": "k1", "0.3": "k1"}
    b.seen["0.2"] = ("fail", "skipped although needed")

    def no_run(*_: object) -> None:
        raise AssertionError("a release with the same modules must not run")

    monkeypatch.setattr(bisect_subjects, "_run", no_run)
    assert b.verdict("0.3", tmp_path / "matrix.yaml") == (
        "fail", "entry points' modules identical to 0.2's")
    with pytest.raises(AssertionError):
        b.verdict("0.1", tmp_path / "matrix.yaml")  # no key (no entry point here): it runs
