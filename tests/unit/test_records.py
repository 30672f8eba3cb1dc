"""Every record refuses a mistyped or unknown key, naming its path; each survives a round
trip through its JSON; schema-2 files are read with their fields renamed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlxcompat.records.base import Record, RecordError
from mlxcompat.records.bench import FailedBench, MeasuredBench, SkippedBench, Spread
from mlxcompat.records.cell import CellDoc, UpstreamRun, read_cell
from mlxcompat.records.migrate import bench_v2, patch_v2, result_v2
from mlxcompat.records.need import Need, NeedRecord
from mlxcompat.records.patches import Idempotence, PatchRow
from mlxcompat.records.report import CompatDoc, Outcome, ReportRow, read_compat
from mlxcompat.records.rows import ResultRow
from mlxcompat.settings import BenchProfile
from mlxcompat.spec import CellRun, SubjectRun

ROW = ResultRow(check="parity", subject="none", verdict="fail", model="mamba", mode="fresh",
                delta=0.05, tokens_equal=True, detail="max |Δ| 5.00e-02 > 1e-04")
PATCH = PatchRow(subject="mlxcompat", role="mamba", entry_point="m:f", observed="applied",
                 idempotence=Idempotence(unpatch_offered=True))
SPREAD = Spread(rounds=3, median=10.0, ci95=[9.0, 11.0], values=[9.0, 10.0, 11.0])
MEASURED = MeasuredBench(model="llama", subject="none", batch=8, gen_tok_s=SPREAD,
                         prefill_tok_s=SPREAD)
EXAMPLES: list[tuple[type[Record], Record, str]] = [
    (ResultRow, ROW, "verdcit"),
    (PatchRow, PATCH, "status"),
    (Idempotence, Idempotence(), "unpatch"),
    (MeasuredBench, MEASURED, "gate"),
    (SkippedBench, SkippedBench(model="llama", subject="none", batch=8, reason="r"), "skip"),
    (FailedBench, FailedBench(model="llama", subject="none", batch=8, detail="d"), "error"),
    (Need, Need(needed=True, why="w"), "capabilities"),
    (NeedRecord, NeedRecord(needs={"ssm": Need(needed=False)}), "ssm"),
    (CellDoc, CellDoc(cell="mlx-lm-0.32.2", results=[ROW], patches=[PATCH],
                      bench=[MEASURED]), "result"),
    (Outcome, Outcome(expected=False, why="w"), "outcome"),
    (ReportRow, ReportRow(**ROW.model_dump(), cell="c", outcome=Outcome(expected=True)),
     "expectation"),
    (CompatDoc, CompatDoc(), "result"),
    (UpstreamRun, UpstreamRun(cell="c", mlx_lm="0.32.2", subject="s"), "mlxlm"),
    (BenchProfile, BenchProfile(name="quick"), "gate"),
    (CellRun, CellRun(cell="c", out="o", backend="cpu", run_id="r", subjects=["none"],
                      models=["llama"]), "mode"),
    (SubjectRun, SubjectRun(cell="c", subject="none", out="o"), "modes"),
]


@pytest.mark.parametrize(("cls", "record", "bad"), EXAMPLES, ids=[e[0].__name__ for e in EXAMPLES])
def test_round_trip_and_a_mistyped_key_fails_naming_it(cls, record, bad) -> None:
    data = json.loads(json.dumps(record.to_json(), default=str))
    assert cls.from_json(data) == record
    with pytest.raises(RecordError, match=f"{bad}: Extra inputs are not permitted"):
        cls.from_json({**data, bad: 1})


def test_a_nested_mistyped_key_names_its_path() -> None:
    data = CellDoc(cell="c", results=[ROW]).to_json()
    data["results"][0]["tokens_eq"] = True
    with pytest.raises(RecordError, match=r"results\[0\]\.tokens_eq"):
        CellDoc.from_json(data)


def test_a_bench_row_is_told_apart_by_its_kind_not_by_which_key_it_has() -> None:
    data = {**MEASURED.to_json(), "kind": "skipped"}
    with pytest.raises(RecordError, match="skipped"):
        CellDoc.from_json({"cell": "c", "bench": [data]})
    back = CellDoc.from_json({"cell": "c", "bench": [MEASURED.to_json()]})
    assert isinstance(back.bench[0], MeasuredBench)


def test_a_verdict_outside_the_vocabulary_fails() -> None:
    with pytest.raises(RecordError, match="verdict"):
        ResultRow.from_json({**ROW.to_json(), "verdict": "passed"})


@pytest.mark.parametrize(("old", "new"), [
    ({"check": "patch-status", "mode": "mamba"}, {"role": "mamba", "mode": ""}),
    ({"check": "glm4v", "mode": "padded/inner"}, {"scenario": "padded", "path": "inner"}),
    ({"check": "cache-contract", "mode": "extract-merge"}, {"scenario": "extract-merge"}),
    ({"check": "upstream-suite", "mode": "(all)"}, {"test": "(all)"}),
    ({"check": "parity", "mode": "fresh"}, {"mode": "fresh"}),
])
def test_schema_2_result_rows_get_one_word_per_meaning(old, new) -> None:
    row = ResultRow.from_json(result_v2({**old, "subject": "s", "verdict": "pass",
                                         "model": "", "expected": None,
                                         "metrics": {"max_abs_delta": 0.0, "rows": 4}}))
    assert {k: getattr(row, k) for k in new} == new
    assert row.delta == 0.0 and row.metrics == {"rows": 4}


def test_schema_2_patch_and_bench_rows_are_renamed() -> None:
    patch = PatchRow.from_json(patch_v2({"subject": "s", "patch": "mamba", "status": "applied",
                                         "entry_point": "m:f",
                                         "idempotence": {"unpatch": True}}))
    assert (patch.role, patch.observed, patch.idempotence.unpatch_offered) == (
        "mamba", "applied", True)
    skip = bench_v2({"model": "llama", "subject": "none", "batch": 8, "skip": "absent"})
    assert SkippedBench.from_json(skip).reason == "absent"


def test_the_committed_reports_are_readable_records() -> None:
    root = Path(__file__).resolve().parents[2] / "reports"
    for path in sorted((root / "raw").glob("*.json"))[:6]:
        if ".bench." in path.name or ".upstream." in path.name:
            continue
        assert read_cell(path).cell == path.stem
    if (root / "baseline.json").exists():
        assert read_compat(root / "baseline.json").results
