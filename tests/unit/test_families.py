"""Subject families: one entry, many releases; expanded from the lock, offline; a family's name
stands for its members; expectations match a member's own release."""

from __future__ import annotations

import copy

import pytest

from mlxcompat.matrix import MatrixError, parse_matrix
from mlxcompat.records.lock import PackageReleases, ReleaseLock
from mlxcompat.records.rows import ResultRow

LOCK = ReleaseLock(packages={"srv": PackageReleases(versions=["0.1.0", "0.2.0", "0.3.0",
                                                              "1.0.0"])})
BASE = {
    "schema": 3,
    "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
    "subjects": {
        "none": {},
        "srv": {"package": "srv", "versions": "all", "within": ">=0.2.0,<1",
                "entry_points": {"mamba": {"entry": "srv.patch:fix", "releases": ">=0.3.0"},
                                 "glm4v": "srv.vlm:fix"}},
        "other": {"package": "other-srv", "versions": ["2.0", "1.0"],
                  "entry_points": {"mamba": "other.p:f"}},
    },
    "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "subjects": ["none", "srv"]},
              {"mlx-lm": "0.31.3", "mlx": "0.31.2", "extra_subjects": ["other"]}],
}


def test_a_family_expands_to_one_subject_per_release_with_the_entry_points_it_ships() -> None:
    m = parse_matrix(copy.deepcopy(BASE), lock=LOCK)
    assert m.families["srv"].versions == ("0.2.0", "0.3.0")
    assert m.subjects["srv-0.2.0"].entry_points == {"glm4v": "srv.vlm:fix"}
    assert m.subjects["srv-0.3.0"].entry_points == {"mamba": "srv.patch:fix",
                                                    "glm4v": "srv.vlm:fix"}
    assert m.subjects["srv-0.3.0"].install == ("srv==0.3.0",)
    assert (m.subjects["srv-0.3.0"].family, m.subjects["srv-0.3.0"].version) == ("srv", "0.3.0")
    assert m.cells[0].subjects == ("none", "srv-0.2.0", "srv-0.3.0")


def test_a_list_of_versions_needs_no_lock_and_extra_subjects_add_to_the_defaults() -> None:
    m = parse_matrix(copy.deepcopy(BASE), lock=LOCK)
    assert m.families["other"].versions == ("1.0", "2.0")  # sorted, oldest first
    assert m.cells[1].subjects[-2:] == ("other-1.0", "other-2.0")


def test_newest_is_one_subject_named_after_the_family() -> None:
    doc = copy.deepcopy(BASE)
    doc["subjects"]["srv"] = {"package": "srv", "versions": "newest",
                              "entry_points": {"mamba": "srv.patch:fix"}}
    m = parse_matrix(doc, lock=LOCK)
    assert m.subjects["srv"].install == ("srv==1.0.0",)
    assert m.cells[0].subjects == ("none", "srv")


def test_all_without_a_recorded_list_names_the_fix() -> None:
    with pytest.raises(MatrixError, match=r"subjects\.srv\.versions: all: no release list of "
                       r"srv is recorded; run `mlxcompat releases --write`"):
        parse_matrix(copy.deepcopy(BASE))


@pytest.mark.parametrize(("path", "value", "words"), [
    ("versions", "some", "subjects.srv.versions: 'some'; allowed: a list of releases, all"),
    ("within", ">=5", "subjects.srv.within: no recorded release of srv is >=5"),
    ("entry_points", {"mamba": {"entry": "nocolon"}}, "entry_points.mamba.entry: 'nocolon'"),
    ("entry_points", {"speedup": "a:b"}, "subjects.srv.entry_points.speedup: unknown key"),
])
def test_family_mistakes_name_their_key(path: str, value: object, words: str) -> None:
    doc = copy.deepcopy(BASE)
    doc["subjects"]["srv"][path] = value
    with pytest.raises(MatrixError) as info:
        parse_matrix(doc, lock=LOCK)
    assert words in str(info.value)


def test_a_member_declared_twice_is_refused() -> None:
    doc = copy.deepcopy(BASE)
    doc["subjects"]["srv-0.2.0"] = {}
    with pytest.raises(MatrixError, match="a family's member of this name"):
        parse_matrix(doc, lock=LOCK)


def test_expectations_name_a_family_and_match_a_members_release() -> None:
    doc = copy.deepcopy(BASE)
    doc["expectations"] = [{"match": {"subject": "srv", "release": ">=0.3.0,<0.4"},
                            "verdict": "fail", "reason": "its mamba patch drifts"}]
    m = parse_matrix(doc, lock=LOCK)
    exp = m.expectations[0]
    assert exp.names["subject"] == ("srv-0.2.0", "srv-0.3.0")
    row = ResultRow(check="parity", subject="srv-0.3.0", verdict="fail", model="mamba")
    assert m.expectation_for(row, "mlx-lm-0.32.2", {"mlx-lm": "0.32.2"}) is exp
    older = row.model_copy(update={"subject": "srv-0.2.0"})
    assert m.expectation_for(older, "mlx-lm-0.32.2", {"mlx-lm": "0.32.2"}) is None


def test_release_alone_is_an_upper_bound_for_an_expectation() -> None:
    doc = copy.deepcopy(BASE)
    doc["expectations"] = [{"match": {"subject": "srv"}, "verdict": "fail", "reason": "r"}]
    with pytest.raises(MatrixError, match="give a version upper bound"):
        parse_matrix(doc, lock=LOCK)
    doc["expectations"][0]["match"]["release"] = "<0.4"
    parse_matrix(doc, lock=LOCK)


def test_only_a_familys_newest_release_is_benchmarked() -> None:
    from types import SimpleNamespace

    from mlxcompat.workers import older_releases

    m = parse_matrix(copy.deepcopy(BASE), lock=LOCK)
    assert older_releases(SimpleNamespace(matrix=m)) == {"srv-0.2.0", "other-1.0"}
