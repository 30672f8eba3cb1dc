"""A cell document from its subject processes: every shortfall is an error row naming why."""

from collections import deque
from types import SimpleNamespace

import pytest

from mlxcompat.merge import Part, combine_benchmarks, merge_cell
from mlxcompat.records.cell import CellDoc
from mlxcompat.spec import CellRun


def _opts(*names, previous=None):
    run = CellRun(cell="c", out="c.json", backend="cpu", run_id="r", subjects=list(names),
                  models=["llama"], timeout_s=60, jobs=2)
    matrix = SimpleNamespace(run_checks=lambda cell=None: ("install", "import", "parity"))
    return SimpleNamespace(run=run, subjects=[SimpleNamespace(name=n) for n in names],
                           previous=previous, reused=tuple(names) if previous else (),
                           matrix=matrix)


def _worker(name, code=0, timed_out=False, tail=()):
    return SimpleNamespace(name=name, code=code, timed_out=timed_out, tail=deque(tail))


def _part(subject, verdicts, collected=None):
    return {"cell": "c", "env": {"python": "3.11"},
            "subjects": {subject: {"collected": len(verdicts) if collected is None
                                   else collected}},
            "results": [{"check": "parity", "verdict": v, "subject": subject} for v in verdicts],
            "patches": [], "bench": []}


def _merge(parts, opts=None):
    opts = opts or _opts(*parts)
    found = {name: Part(*p) for name, p in parts.items()}
    return merge_cell(opts, found, None, 0.0)[0].to_json()


def _runs(doc):
    return [r for r in doc["results"] if r["check"] == "run"]


def test_an_unreadable_part_is_an_error_naming_the_key():
    part = _part("none", ["pass"])
    part["results"][0]["verdcit"] = "pass"
    doc = _merge({"none": (_worker("none", 0), part, None)})
    (row,) = _runs(doc)
    assert "unreadable record" in row["detail"] and "verdcit" in row["detail"]


def test_complete_subjects_add_nothing():
    doc = _merge({"none": (_worker("none", 1), _part("none", ["pass", "fail"]), None)})
    assert _runs(doc) == [] and doc["complete"] is True
    assert doc["subjects"]["none"]["collected"] == 2
    # what the run was asked to check is kept, so the report can tell a narrowed run
    assert doc["checks"] == ["install", "import", "parity"] and doc["only"] == {}


@pytest.mark.parametrize(("code", "words"), [
    (2, "interrupted or collection error"), (3, "internal error"), (4, "usage error"),
    (5, "no tests were collected")])
def test_pytest_exit_codes_become_errors(code, words):
    doc = _merge({"none": (_worker("none", code, tail=["E   boom"]), None, None)})
    (row,) = _runs(doc)
    assert row["verdict"] == "error" and words in row["detail"] and "boom" in row["detail"]


def test_fewer_rows_than_collected_is_an_error():
    doc = _merge({"none": (_worker("none", 1), _part("none", ["pass"], collected=3), None)})
    (row,) = _runs(doc)
    assert "only 1 of 3 collected checks recorded a result" in row["detail"]


def test_nothing_collected_is_an_error():
    doc = _merge({"none": (_worker("none", 0), _part("none", [], collected=0), None)})
    assert "no checks were collected" in _runs(doc)[0]["detail"]


def test_timeout_and_signal_are_errors_and_keep_what_ran():
    doc = _merge({"none": (_worker("none", None, timed_out=True), _part("none", ["pass"]), None),
                  "x": (_worker("x", -11), _part("x", ["pass"]), None)})
    assert [r["verdict"] for r in doc["results"] if r["check"] == "parity"] == ["pass", "pass"]
    details = [r["detail"] for r in _runs(doc)]
    assert "60s budget" in details[0] and "signal 11" in details[1]


def test_a_subject_that_never_started_is_an_error():
    doc = _merge({}, _opts("none"))
    assert "never started" in _runs(doc)[0]["detail"]


def test_reused_subjects_are_copied_and_marked():
    old = CellDoc.from_json({"cell": "c", "complete": True, "env": {"python": "3.11"},
                             "results": [{"check": "parity", "verdict": "pass",
                                          "subject": "none"}],
                             "subjects": {"none": {"collected": 1}}})
    doc = _merge({}, _opts("none", previous=old))
    assert doc["results"][0]["reused"] is True and doc["subjects"]["none"]["reused"] is True


def test_benchmarks_of_all_subjects_go_into_one_compare_file():
    one = {"machine_info": {}, "benchmarks": [{"name": "test_throughput[llama-8]",
                                                "fullname": "x::test_throughput[llama-8]",
                                                "params": {}, "group": None}]}
    doc = combine_benchmarks({"none": one, "mlxcompat": one})
    assert [b["name"] for b in doc["benchmarks"]] == [
        "none::test_throughput[llama-8]", "mlxcompat::test_throughput[llama-8]"]
