"""The report fails closed: every way a green report could be green by omission fails it."""

from __future__ import annotations

import json
from pathlib import Path

from cellkit import build, cell, matrix, result, standard_cells, write


def test_all_expected_is_ok(raw) -> None:
    code, line, out = build(raw)
    assert code == 0, line
    assert "unexpected: 0" in line
    report = json.loads((out / "compat.json").read_text())
    mamba = next(r for r in report["results"] if r["model"] == "mamba"
                 and r["cell"] == "mlx-lm-0.32.2" and r["subject"] == "mlxcompat"
                 and r["mode"] == "fresh")
    assert (mamba["outcome"]["expected"], mamba["outcome"]["expectation"],
            mamba["outcome"]["link"]) == (True, 0, "https://example.org/issue")


def test_half_written_cell_json_fails_the_report(raw, capsys) -> None:
    (raw / "mlx-lm-0.32.2.json").write_text('{"schema": 3, "cell": "mlx-lm-0.32')
    code, line, _ = build(raw)
    assert code == 1 and "1 input problem(s)" in line
    assert "mlx-lm-0.32.2.json: unreadable (JSONDecodeError" in capsys.readouterr().err


def test_future_schema_fails_the_report(raw) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps({**doc, "schema": 4}))
    code, line, out = build(raw)
    assert code == 1 and "input problem" in line
    assert "schema 4; this mlxcompat reads schema 3" in (out / "compat.md").read_text()


def test_a_mistyped_key_in_a_cell_json_fails_the_report(raw, capsys) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["results"][0]["verdcit"] = doc["results"][0].pop("verdict")
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "input problem" in line
    assert "results[0].verdcit: Extra inputs are not permitted" in capsys.readouterr().err


def _v2_mode(row: dict) -> str:
    """Schema 2's one `mode` for what schema 3 keys by mode, role, scenario/path or test."""
    where = "/".join(p for p in (row.get("scenario"), row.get("path")) if p)
    return row["mode"] or row.get("role") or where or row.get("test") or ""


def test_a_schema_2_cell_json_is_read_with_its_fields_renamed(raw, capsys) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    old = {**doc, "schema": 2, "install": {"status": "ok", "seconds": 1.5, "log_tail": ""},
           "results": [{"check": r["check"], "verdict": r["verdict"], "mode": _v2_mode(r),
                        "model": r["model"], "subject": r["subject"], "expected": None,
                        "metrics": {"max_abs_delta": r["delta"],
                                    "tokens_equal": r["tokens_equal"]},
                        "detail": r["detail"], "seconds": 0.1} for r in doc["results"]
                       if r["check"] != "process-state"]}  # a check schema 2 never had
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(old))
    code, line, out = build(raw)
    # read with every field renamed; the only shortfall is the check it predates
    assert code == 1 and "1 missing" in line, line
    err = capsys.readouterr().err
    assert "mlx-lm-0.32.2: 1 case(s) today's harness runs have no row (mlxcompat " \
        "process-state ×1;" in err, err
    rows = json.loads((out / "compat.json").read_text())["results"]
    mamba = next(r for r in rows if r["model"] == "mamba" and r["cell"] == "mlx-lm-0.32.2"
                 and r["subject"] == "mlxcompat" and r["mode"] == "fresh")
    assert (mamba["delta"], mamba["tokens_equal"]) == (0.019, True)


def test_unfinished_run_fails_the_report(raw) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps({**doc, "complete": False}))
    code, line, _ = build(raw)
    assert code == 1 and "input problem" in line


def test_one_of_two_cells_present_fails_naming_the_missing_one(raw, capsys) -> None:
    (raw / "mlx-lm-0.29.1.json").unlink()
    code, line, _ = build(raw)
    assert code == 1 and "1 missing cell(s)" in line
    assert "mlx-lm-0.29.1: no result" in capsys.readouterr().err


def test_a_tagged_run_needs_only_its_cells(raw) -> None:
    (raw / "mlx-lm-0.29.1.json").unlink()
    doc = matrix()
    doc["cells"][1]["tags"] = ["quick"]
    code, line, _ = build(raw, doc, tag="quick")
    assert code == 0, line


def test_stray_cell_json_is_listed_and_ignored(raw, capsys) -> None:
    write(raw, {"local": cell("local", "0.32.2", [result("parity", "fail", "llama", "fresh")])})
    code, line, out = build(raw)
    assert code == 0, line
    assert "ignored local.json" in capsys.readouterr().err
    cells = [c["cell"] for c in json.loads((out / "compat.json").read_text())["cells"]]
    assert "local" not in cells


def test_every_label_present_needs_every_cell(raw) -> None:
    copy = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    write(raw, {"mlx-lm-0.32.2@macos-14": {**copy, "cell": "mlx-lm-0.32.2@macos-14"}})
    code, line, _ = build(raw)
    assert code == 1 and "1 missing cell(s)" in line


def _accept_then(raw: Path, edit) -> tuple[int, str, Path]:
    code, line, _ = build(raw, accept=True)
    assert code == 0, line
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    edit(doc)
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    return build(raw)


def test_vanished_row_is_a_regression(raw, capsys) -> None:
    code, line, _ = _accept_then(raw, lambda d: d["results"].pop(0))
    assert code == 1 and "1 regression(s)" in line
    assert "parity llama fresh none: vanished" in capsys.readouterr().out


def test_pass_to_skip_is_a_regression(raw) -> None:
    def edit(d):
        d["results"][1].update(verdict="skip", detail="model gone")
    code, line, _ = _accept_then(raw, edit)
    assert code == 1 and "1 regression(s)" in line


def test_pass_to_expected_failure_is_a_regression(raw) -> None:
    def edit(d):
        d["results"][0].update(model="mamba", verdict="fail", delta=0.01, tokens_equal=True)
    code, line, _ = _accept_then(raw, edit)
    assert code == 1 and "regression" in line


def test_error_of_another_type_is_a_regression(tmp_path) -> None:
    raw = write(tmp_path / "r" / "raw", standard_cells())
    build(raw, accept=True)
    doc = json.loads((raw / "mlx-lm-0.29.1.json").read_text())
    doc["results"][1]["detail"] = "TypeError: extract() takes 1 argument"
    (raw / "mlx-lm-0.29.1.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "regression" in line and "unexpected" in line


def test_ci_label_without_its_baseline_says_so_and_does_not_fail(tmp_path, capsys) -> None:
    raw = write(tmp_path / "r" / "raw", standard_cells())
    build(raw, accept=True)
    for name in list(standard_cells()):
        (raw / f"{name}.json").rename(raw / f"{name}@macos-14.json")
        doc = json.loads((raw / f"{name}@macos-14.json").read_text())
        doc["cell"] = f"{name}@macos-14"
        (raw / f"{name}@macos-14.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 0, line
    assert "2 cell(s) had no comparable baseline" in capsys.readouterr().out


def test_delta_beyond_the_recorded_bound_is_unexpected(raw) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["results"][2]["delta"] = 0.07
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, out = build(raw)
    assert code == 1 and "1 unexpected" in line
    row = next(r for r in json.loads((out / "compat.json").read_text())["results"]
               if r["model"] == "mamba" and r["cell"] == "mlx-lm-0.32.2"
               and r["subject"] == "mlxcompat" and r["mode"] == "fresh")
    assert "beyond the recorded bound 0.05" in row["outcome"]["why"]


def test_error_expectation_checks_the_message(raw) -> None:
    doc = json.loads((raw / "mlx-lm-0.29.1.json").read_text())
    doc["results"][1]["detail"] = "IndexError: list index out of range"
    (raw / "mlx-lm-0.29.1.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "1 unexpected" in line


def test_stale_expectation_is_listed_on_a_full_run(raw) -> None:
    doc = matrix()
    doc["expectations"].append({"match": {"check": "parity", "model": "qwen3_5",
                                          "mlx-lm": "<0.20"}, "verdict": "fail",
                                "reason": "never seen"})
    _, _, out = build(raw, doc)
    report = json.loads((out / "compat.json").read_text())
    assert report["full_run"] is True
    stale = [e for e in report["expectations"] if e["covered"] == 0]
    assert [e["reason"] for e in stale] == ["never seen"]
    assert "1 stale" in (out / "compat.md").read_text()


def test_hostile_text_is_escaped_in_markdown(raw) -> None:
    doc = json.loads((raw / "mlx-lm-0.29.1.json").read_text())
    doc["results"][1]["detail"] = "AttributeError: no extract <script>alert(1)</script> | pipe"
    (raw / "mlx-lm-0.29.1.json").write_text(json.dumps(doc))
    _, _, out = build(raw)
    md = (out / "compat.md").read_text()
    assert "<script>" not in md
    widths: list[int] = []
    for line in [*md.splitlines(), ""]:
        if line.startswith("|"):
            widths.append(line.count("|") - line.count("\\|"))
        elif widths:
            assert len(set(widths)) == 1, "a table row has a different number of columns"
            widths = []


def test_missing_raw_folder_fails(tmp_path, capsys) -> None:
    code, line, _ = build(tmp_path / "nothing")
    assert "no such folder" in capsys.readouterr().err
    assert code == 1 and "no cell results" in line


def test_the_as_installed_cell_leads_the_front_page(tmp_path) -> None:
    doc = matrix(subjects={"none": {}, "mlxcompat": {}, "srv": {"install": ["srv==1.0"]}},
                 cells=[{"mlx-lm": "0.32.2", "mlx": "0.32.2"}, {"resolve": "srv"}])
    cells = standard_cells()
    installed = cell("as-installed-srv", "0.31.3", [
        result("parity", "fail", "mamba", "fresh", "none", max_abs_delta=0.019,
               tokens_equal=True),
        result("parity", "fail", "mamba", "fresh", "srv", max_abs_delta=0.019,
               tokens_equal=True),
        result("parity", "pass", "mamba", "fresh", "mlxcompat")])
    raw = write(tmp_path / "reports" / "raw",
                {"mlx-lm-0.32.2": cells["mlx-lm-0.32.2"], "as-installed-srv": installed})
    doc["expectations"][0]["match"]["subject"] = ["none", "srv"]
    _, _, out = build(raw, doc)
    md = (out / "compat.md").read_text()
    pins = md[md.index("### What to pin"):]
    srv = next(line for line in pins.splitlines() if line.startswith("| srv |"))
    assert "drift on mlx-lm 0.31.3" in srv and "with mlxcompat: ok" in srv, srv


def test_a_subject_or_model_without_rows_fails_the_report(raw, capsys) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["results"] = [r for r in doc["results"] if r["subject"] != "mlxcompat"]
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "missing" in line
    err = capsys.readouterr().err
    assert "mlx-lm-0.32.2: no result for subject mlxcompat" in err


def test_a_cell_without_a_case_of_todays_harness_fails_the_report(raw, capsys) -> None:
    """A file written before a scenario existed (or that lost its rows) reads complete for
    the run that wrote it; against today's case list it is short, and says which cases."""
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["harness"] = "mlxcompat 0.1.0 (git old)"
    doc["results"] = [r for r in doc["results"]
                      if not (r["check"] == "parity" and r["mode"] == "history-join")]
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "1 missing" in line, line
    err = capsys.readouterr().err
    assert "mlx-lm-0.32.2: 8 case(s) today's harness runs have no row (mlxcompat parity " \
        "history-join ×4, none parity history-join ×4; run by mlxcompat 0.1.0 (git old))" in err
    quick = matrix(cells=[{**c, "tags": ["quick"]} for c in matrix()["cells"]])
    code, line, _ = build(raw, quick, tag="quick")  # a partial report needs whole cells too
    assert code == 1 and "1 missing" in line, line


def test_a_run_narrowed_by_checks_covers_only_a_partial_report(raw, capsys) -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["checks"] = ["install", "import", "parity", "cache-contract", "patch-status",
                     "idempotence"]  # the run's --checks left out process-state (and glm4v, vlm)
    doc["results"] = [r for r in doc["results"] if r["check"] != "process-state"]
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))
    code, line, _ = build(raw)
    assert code == 1 and "1 missing" in line, line
    assert "mlx-lm-0.32.2: the run left out check glm4v, check vlm, check process-state" \
        in capsys.readouterr().err
    quick = matrix(cells=[{**c, "tags": ["quick"]} for c in matrix()["cells"]])
    code, line, _ = build(raw, quick, tag="quick")
    assert code == 0, line


def test_a_runner_may_declare_what_it_covers(raw) -> None:
    for name in ("mlx-lm-0.29.1", "mlx-lm-0.32.2"):
        doc = json.loads((raw / f"{name}.json").read_text())
        doc["cell"] = f"{name}@gpu"
        doc["results"] = [r for r in doc["results"] if r["subject"] == "none"]
        (raw / f"{name}@gpu.json").write_text(json.dumps(doc))
    narrowed = matrix(runners={"gpu": {"subjects": ["none"], "models": ["llama", "mamba2"]}})
    code, line, _ = build(raw, narrowed)
    assert "no result for subject" not in line and code == 0, line
    code, _, _ = build(raw)  # the same files, the runner declaring nothing: not covered
    assert code == 1
