"""The upstream-suite check: JUnit outcomes, the comparison of the two runs, and the report
taking its rows into the cell they belong to."""

from __future__ import annotations

import json
from pathlib import Path

from mlxcompat.records.rows import ResultRow
from mlxcompat.report.load import load_cells
from mlxcompat.upstream_suite import compare, outcomes

JUNIT = """<?xml version="1.0"?><testsuites><testsuite name="pytest">
<testcase classname="test_generate.TestGenerate" name="test_generate"/>
<testcase classname="test_generate.TestGenerate" name="test_batch"><failure message="x"/></testcase>
<testcase classname="test_prompt_cache.TestPromptCache" name="test_trim"><skipped/></testcase>
<testcase classname="test_prompt_cache.TestPromptCache" name="test_load"><error/></testcase>
</testsuite></testsuites>"""


def test_junit_outcomes_are_read_per_test(tmp_path: Path) -> None:
    (tmp_path / "r.xml").write_text(JUNIT)
    assert outcomes(tmp_path / "r.xml") == {
        "TestGenerate::test_generate": "passed", "TestGenerate::test_batch": "failed",
        "TestPromptCache::test_trim": "skipped", "TestPromptCache::test_load": "error"}


def test_a_changed_outcome_fails_and_the_summary_counts_what_ran() -> None:
    before = {"a": "passed", "b": "failed", "c": "skipped", "d": "passed"}
    after = {"a": "failed", "b": "failed", "c": "skipped"}
    rows = compare("s", before, after)
    changed = {r.test: r.detail for r in rows[:-1]}
    assert changed == {"a": "passed without the patches, failed with them",
                       "d": "passed without the patches, absent with them"}
    summary = rows[-1]
    assert summary.verdict == "fail" and summary.test == "(all)"
    assert summary.detail.startswith("3 of 4 upstream tests ran (1 skipped); 2 outcome(s)")
    assert summary.metrics["fail_either_way"] == ["b"]


def test_no_change_is_one_passing_row() -> None:
    rows = compare("s", {"a": "passed"}, {"a": "passed"})
    assert [(r.verdict, r.test) for r in rows] == [("pass", "(all)")]


def _cell(raw: Path, name: str) -> None:
    doc = {"schema": 3, "cell": name, "complete": True, "results": [], "patches": [],
           "bench": [], "subjects": {}, "install": {"ok": True},
           "env": {"packages": {"mlx-lm": "0.31.3"}}}
    (raw / f"{name}.json").write_text(json.dumps(doc))


def test_upstream_rows_join_their_cell_and_a_bad_or_stale_file_is_a_problem(tmp_path: Path) -> None:
    for name in ("c1", "c2", "c3"):
        _cell(tmp_path, name)
    row = {"check": "upstream-suite", "verdict": "pass", "test": "(all)", "subject": "s"}
    for name, cell, version in (("c1", "c1", "0.31.3"), ("c2", "c1", "0.31.3"),
                                ("c3", "c3", "0.31.2")):
        (tmp_path / f"{name}.upstream.s.json").write_text(
            json.dumps({"schema": 3, "cell": cell, "mlx_lm": version, "subject": "s",
                        "results": [row]}))
    loaded = load_cells(tmp_path)
    by_cell = {c.cell: [r.to_json() for r in c.results] for c in loaded.cells}
    assert by_cell == {"c1": [ResultRow.from_json(row).to_json()], "c2": [], "c3": []}
    assert loaded.problems[0] == "c2.upstream.s.json: not an upstream-suite record of c2"
    assert loaded.problems[1].startswith("c3.upstream.s.json: ran mlx-lm 0.31.2, the cell now")
