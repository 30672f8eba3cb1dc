"""CI fails closed: an asked runner label without files, annotations within GitHub's quota,
and the adopter's matrix on the CPU where the hosted GPU is paravirtual."""

from __future__ import annotations

import json
from pathlib import Path
from string import Template

import yaml
from cellkit import MATRIX, cell, result, standard_cells

from mlxcompat.cli import main
from mlxcompat.matrix import parse_matrix
from mlxcompat.records.cell import CellDoc
from mlxcompat.report.aggregate import aggregate
from mlxcompat.report.ci import MAX_ANNOTATIONS, annotation_lines
from mlxcompat.report.load import load_cells

ROOT = Path(__file__).resolve().parents[2]


def _raw(tmp_path: Path, label: str) -> Path:
    raw = tmp_path / "raw"
    raw.mkdir()
    for name, doc in standard_cells().items():
        doc = {**doc, "cell": f"{name}@{label}"}
        (raw / f"{name}@{label}.json").write_text(json.dumps(doc))
    (tmp_path / "matrix.yaml").write_text(yaml.safe_dump(MATRIX))
    return raw


def test_an_asked_label_without_any_file_is_missing(tmp_path) -> None:
    raw = _raw(tmp_path, "linux-cpu")
    loaded = load_cells(raw, parse_matrix(MATRIX), labels=("macos-15", "linux-cpu"))
    assert loaded.missing == ["macos-15: no result files at all (the run asked for this "
                              "runner label)"]
    assert not load_cells(raw, parse_matrix(MATRIX), labels=("linux-cpu",)).missing


def test_the_report_fails_for_an_asked_label_without_files(tmp_path, capsys) -> None:
    raw = _raw(tmp_path, "linux-cpu")
    args = ["--matrix", str(tmp_path / "matrix.yaml"), "report", "--raw", str(raw),
            "--no-html"]
    assert main([*args, "--labels", "linux-cpu"]) == 0
    assert main([*args, "--labels", "macos-15,macos-26,linux-cpu"]) == 1
    out = capsys.readouterr()
    assert "missing: macos-26: no result files at all" in out.err
    assert "FAILED: 2 missing cell(s)" in out.out


def test_annotations_are_the_first_ten_and_one_summary_line(tmp_path) -> None:
    rows = [result("parity", "fail", model="llama", mode=f"m{i}") for i in range(25)]

    def write(n: int, problems: list[str]) -> Path:
        doc = aggregate([CellDoc.from_json(cell("c", "0.32.2", rows[:n]))], None)
        doc.problems = problems
        report = tmp_path / "compat.json"
        report.write_text(json.dumps(doc.to_json()))
        return report

    lines = annotation_lines(write(25, ["p.json: unreadable"]))
    errors = [line for line in lines if line.startswith("::error")]
    assert len(errors) == MAX_ANNOTATIONS == 10
    assert errors[1].startswith("::error title=c: parity llama m0 none::fail and no expectation")
    assert lines[-1].startswith("::warning title=mlxcompat summary::26 finding(s)")
    assert "16 more not shown here" in lines[-1] and len(lines) == 11
    three = annotation_lines(write(3, []))
    assert len(three) == 4 and "more" not in three[-1]
    assert annotation_lines(write(0, [])) == []


def test_the_adopter_matrix_forces_the_paravirtual_gpu_onto_the_cpu() -> None:
    text = (ROOT / "src/mlxcompat/templates/matrix.yaml.tmpl").read_text()
    values = {"name": "srv", "package": "srv", "entry_points": "{}", "old": "0.31.3",
              "old_mlx": "0.31.2", "newest": "0.32.2", "newest_mlx": "0.32.2"}
    doc = yaml.safe_load(Template(text).substitute(values))
    own = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    assert doc["settings"]["force_cpu_devices"] == own["settings"]["force_cpu_devices"]
    assert list(parse_matrix(doc).settings.force_cpu_devices) == ["Paravirtual"]
