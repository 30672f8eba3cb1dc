"""`nox -s curve` writes <cell>.curve.json: its bench rows join the cell's in the report when
it ran the cell's releases on its backend; a stale or unfinished curve is a problem line (the
report fails), and a curve file is never read as a cell of its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mlxcompat.matrix import MatrixError, load_matrix
from mlxcompat.report.load import load_cells

ROOT = Path(__file__).resolve().parents[2]


def _doc(name: str, mlx_lm: str, bench: list[dict], complete: bool = True) -> dict:
    return {"schema": 3, "cell": name, "complete": complete, "results": [], "patches": [],
            "bench": bench, "subjects": {}, "install": {"ok": True},
            "env": {"backend": "cpu", "packages": {"mlx-lm": mlx_lm, "mlx": "0.32.2"}}}


def _row(batch: int, profile: str) -> dict:
    return {"kind": "skipped", "model": "llama", "subject": "none", "batch": batch,
            "profile": profile, "reason": "r"}


def test_a_curve_joins_its_cell_and_a_stale_or_unfinished_one_is_a_problem(
        tmp_path: Path) -> None:
    for name in ("c1", "c2", "c3"):
        (tmp_path / f"{name}.json").write_text(json.dumps(_doc(name, "0.32.2",
                                                               [_row(8, "quick")])))
    curves = {"c1": _doc("c1", "0.32.2", [_row(1, "curve"), _row(32, "curve")]),
              "c2": _doc("c2", "0.32.1", [_row(1, "curve")]),
              "c3": _doc("c3", "0.32.2", [_row(1, "curve")], complete=False)}
    for name, doc in curves.items():
        (tmp_path / f"{name}.curve.json").write_text(json.dumps(doc))
    loaded = load_cells(tmp_path)
    rows = {c.cell: [(b.batch, b.profile) for b in c.bench] for c in loaded.cells}
    assert rows == {"c1": [(8, "quick"), (1, "curve"), (32, "curve")],
                    "c2": [(8, "quick")], "c3": [(8, "quick")]}
    assert loaded.problems[0].startswith("c2.curve.json: ran {'mlx-lm': '0.32.1'")
    assert 'rerun `nox -s "curve(c2)"`' in loaded.problems[0]
    assert loaded.problems[1] == "c3.curve.json: not a finished curve run of c3"
    assert len(loaded.problems) == 2 and not loaded.strays


def test_the_project_matrix_curves_its_newest_cell_and_an_unknown_profile_is_refused(
        tmp_path: Path) -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    assert [(c.id, c.curve, c.bench) for c in matrix.cells if c.curve] == [
        ("mlx-lm-0.32.2", "curve", "")]
    text = (ROOT / "matrix.yaml").read_text().replace("curve: curve,", "curve: kurve,")
    (tmp_path / "matrix.yaml").write_text(text)
    (tmp_path / "matrix.lock.json").write_text((ROOT / "matrix.lock.json").read_text())
    with pytest.raises(MatrixError, match=r"cells\[\d+\]\.curve: 'kurve'"):
        load_matrix(tmp_path / "matrix.yaml")
