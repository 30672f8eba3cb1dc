"""The report from a fixed set of cell JSONs, broken ones included: content, escaping, exit code."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest

from mlxcompat.matrix import parse_matrix
from mlxcompat.report.build import ReportPaths, build_report

FIXTURES = Path(__file__).parent / "fixtures" / "raw"

MATRIX = {
    "schema": 1,
    "backends": {"cpu": {"device": "cpu",
                         "requirement": {"linux": "mlx[cpu]=={v}", "darwin": "mlx=={v}"}}},
    "subjects": {"none": {}, "mlxcompat": {}},
    "cells": [{"mlx-lm": "0.29.1", "mlx": "0.29.2"}, {"mlx-lm": "0.32.2", "mlx": "0.32.2"},
              {"mlx-lm": "0.0.999", "mlx": "0.32.2"}],
    "expectations": [
        {"match": {"check": "parity", "model": "mamba", "subject": "*"}, "verdict": "fail",
         "reason": "Mamba v1 ignores padding masks", "link": "https://example.org/issue"},
        {"match": {"check": "parity", "model": "mamba2", "subject": "none", "mlx-lm": "<0.30.4"},
         "verdict": "error", "reason": "no ArraysCache.extract before 0.30.4"},
        {"match": {"check": "install", "cell": "mlx-lm-0.0.999"}, "verdict": "error",
         "reason": "deliberately unresolvable pin"},
        {"match": {"check": "parity", "model": "qwen3_5", "mode": "history"}, "verdict": "error",
         "reason": "fixture's error with hostile text"},
    ],
}


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    target = tmp_path / "raw"
    shutil.copytree(FIXTURES, target)
    return target


def _build(raw: Path, matrix: dict | None = None, **kw) -> tuple[int, str, Path]:
    paths = ReportPaths.under(raw)
    code, line = build_report(paths, parse_matrix(matrix or MATRIX), html=False, **kw)
    return code, line, paths.out


def test_broken_inputs_are_one_line_each_and_the_rest_renders(raw, capsys) -> None:
    code, line, out = _build(raw)
    err = capsys.readouterr().err
    assert "half-written.json: unreadable (JSONDecodeError" in err
    assert "future.json: schema 2, this mlxcompat reads schema 1" in err
    assert "Traceback" not in err
    report = json.loads((out / "compat.json").read_text())
    assert [c["cell"] for c in report["cells"]] == ["mlx-lm-0.0.999", "mlx-lm-0.29.1",
                                                    "mlx-lm-0.32.2"]
    assert len(report["problems"]) == 2
    md = (out / "compat.md").read_text()
    assert "input problem: half-written.json" in md
    assert code == 0, line


def test_json_rows_carry_outcomes_from_expectations(raw) -> None:
    _, _, out = _build(raw)
    rows = json.loads((out / "compat.json").read_text())["results"]
    by = {(r["cell"], r["model"], r["subject"], r["check"]): r for r in rows}
    mamba = by[("mlx-lm-0.32.2", "mamba", "mlxcompat", "parity")]
    assert (mamba["verdict"], mamba["expected"], mamba["outcome"]) == ("fail", "fail", "expected")
    assert mamba["reason"] == "Mamba v1 ignores padding masks"
    assert mamba["metrics"]["max_abs_delta"] == 0.019
    install = by[("mlx-lm-0.0.999", "", "", "install")]
    assert install["verdict"] == "error" and "no version of mlx-lm==0.0.999" in install["detail"]


def test_markdown_headline_tables_and_footnotes(raw) -> None:
    _, _, out = _build(raw)
    md = (out / "compat.md").read_text()
    assert md.startswith("# mlxcompat compatibility report\n")
    assert "**3 cells** (1 install failed)" in md
    assert "**unexpected: 0**" in md
    assert "| model | mode | subject | lm 0.29.1 | lm 0.32.2 |" in md
    assert "| mamba | fresh | mlxcompat | ❌*[" in md
    note = "Δ 1.90e-02: max \\|Δ\\| 1.90e-02 &gt; 1e-04 — known: Mamba v1 ignores padding masks"
    assert note in md
    assert "| 0.29.1 | mlx-lm-0.29.1 |" not in md
    env = "| mlx-lm-0.29.1 | 0.32.2 | 0.29.1 |  | 5.24.0 | cpu | AMD EPYC &lt;b&gt; | ok | 1.5 |"
    assert env in md
    bench = ("| lm 0.32.2 | llama | none | 8 | 500.0 ± 10.0 | 2.0% | 1000 | 122.0 | 4.10× |  "
             "| 12.0 |  |")
    assert bench in md


def test_hostile_text_is_escaped_in_markdown(raw) -> None:
    _, _, out = _build(raw)
    md = (out / "compat.md").read_text()
    assert "<script>" not in md
    assert "&lt;script&gt;alert(1)&lt;/script&gt; \\| pipe" in md
    widths: list[int] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            widths.append(line.count("|") - line.count("\\|"))
        elif widths:
            assert len(set(widths)) == 1, "a table row has a different number of columns"
            widths = []


def test_hostile_text_is_escaped_in_html(raw) -> None:
    pytest.importorskip("jinja2")
    pytest.importorskip("matplotlib")
    build_report(ReportPaths.under(raw), parse_matrix(MATRIX))
    html = (raw.parent / "compat.html").read_text()
    assert "<script>alert(1)" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert 'id="matrix-parity"' in html and "data:image/png;base64," in html
    assert "http://" not in html.replace("http://www.w3.org", "")


def test_unexpected_failure_fails_and_names_it(raw) -> None:
    matrix = copy.deepcopy(MATRIX)
    matrix["expectations"] = matrix["expectations"][:3]
    code, line, _ = _build(raw, matrix)
    assert code == 1
    assert line == "mlxcompat report: FAILED: 1 unexpected outcome(s)"


def test_fake_regression_against_baseline_fails_and_names_it(raw, capsys) -> None:
    code, _, out = _build(raw, accept=True)
    assert code == 0 and (out / "baseline.json").exists()
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["results"][1].update(verdict="fail", detail="tokens differ (row 0 from step 2)")
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, out = _build(raw)
    printed = capsys.readouterr().out
    assert code == 1
    assert "1 unexpected outcome(s); 1 regression(s) against the baseline" in line
    assert "new failure: mlx-lm-0.32.2 parity mamba2 fresh none (pass -> fail)" in printed
    md = (out / "compat.md").read_text()
    assert "Since the baseline: 1 new failures, 0 new passes" in md


def test_expected_failure_that_is_new_is_not_a_regression(raw) -> None:
    _build(raw, accept=True)
    doc = json.loads((raw / "mlx-lm-0.29.1.json").read_text())
    doc["results"][2].update(model="mamba", verdict="fail", detail="drift")
    (raw / "mlx-lm-0.29.1.json").write_text(json.dumps(doc))
    code, line, _ = _build(raw)
    assert code == 0, line


def test_throughput_drop_beyond_threshold_is_a_regression(raw) -> None:
    _build(raw, accept=True)
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["bench"][1]["gen_tok_s"]["mean"] = 300.0
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, out = _build(raw)
    assert code == 1 and "1 regression(s)" in line
    move = "| mlx-lm-0.32.2 | llama | 8 | none | 500.0 | 300.0 | -40% |"
    assert move in (out / "compat.md").read_text()


def test_missing_raw_folder_is_one_line(tmp_path, capsys) -> None:
    code, line, _ = _build(tmp_path / "nothing")
    assert "no such folder" in capsys.readouterr().err
    assert code == 1 and "no cell results" in line


def test_step_summary_is_written_when_set(raw, tmp_path, monkeypatch) -> None:
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    _build(raw)
    assert summary.read_text().startswith("# mlxcompat compatibility report")
