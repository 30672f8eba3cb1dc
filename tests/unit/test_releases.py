"""`mlxcompat releases` against a recorded PyPI answer: a new release is named (exit 1) and
`--write` appends it the way the matrix writes its cells."""

from __future__ import annotations

import io
import zipfile

import pytest

from mlxcompat import pypi, releases
from mlxcompat.matrix import load_matrix

MATRIX = """schema: 3
backends: {cpu: {device: cpu, requirement: {linux: "mlx[cpu]=={v}"}}}
subjects:
  none: {}
  vllm-mlx-0.6.0:
    install: ["vllm-mlx==0.6.0"]
    entry_points: {mamba: "vllm_mlx.utils.mamba_cache:ensure_mamba_support"}
cells:
  - {mlx-lm: "0.32.1", mlx: "0.32.2"}
  - {mlx-lm: "0.32.2", mlx: "0.32.2", tags: [quick]}
  - {mlx-vlm: "0.7.10", mlx-lm: "0.32.2", mlx: "0.32.4", models: [llama, glm4v_moe]}
"""
INDEX = {
    "mlx-lm": ["0.32.1", "0.32.2", "0.32.3", "0.33.0rc1"],
    "mlx-vlm": ["0.7.10", "0.7.11"],
    "vllm-mlx": ["0.6.0", "0.7.0"],
}


def _wheel(package: str, version: str, floor: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        name = package.replace("-", "_")
        z.writestr(f"{name}-{version}.dist-info/METADATA",
                   f"Name: {package}\nVersion: {version}\nRequires-Dist: mlx>={floor}\n")
    return buf.getvalue()


@pytest.fixture
def recorded(monkeypatch, tmp_path):
    def simple_index(package):
        return [{"filename": f"{package.replace('-', '_')}-{v}-py3-none-any.whl",
                 "url": "https://example.invalid/x.whl", "yanked": False}
                for v in INDEX[package]]

    def wheel_for(package, version, cache):
        path = tmp_path / f"{package}-{version}.whl"
        floor = {"mlx-lm": "0.32.3", "mlx-vlm": "0.32.4"}.get(package, "0.1")
        path.write_bytes(_wheel(package, version, floor))
        return path

    monkeypatch.setattr(pypi, "simple_index", simple_index)
    monkeypatch.setattr(releases, "wheel_for", wheel_for)
    (tmp_path / "matrix.yaml").write_text(MATRIX)
    return tmp_path / "matrix.yaml"


def test_new_releases_are_named_and_fail(recorded, capsys):
    code = releases.check_releases(load_matrix(recorded), recorded)
    out = capsys.readouterr().out
    assert code == 1
    assert "mlx-lm 0.32.3 is newer" in out and "0.33.0rc1" not in out
    assert "mlx-vlm 0.7.11 is newer" in out and "vllm-mlx 0.7.0 is newer" in out


def test_write_appends_cells_and_a_subject_the_matrix_then_loads(recorded):
    assert releases.check_releases(load_matrix(recorded), recorded, write=True) == 1
    matrix = load_matrix(recorded)
    ids = [c.id for c in matrix.cells]
    assert ids.index("mlx-lm-0.32.3") == ids.index("mlx-lm-0.32.2") + 1
    assert matrix.cell("mlx-lm-0.32.3").pins == {"mlx-lm": "0.32.3", "mlx": "0.32.3"}
    assert matrix.cell("mlx-vlm-0.7.11").pins["mlx-lm"] == "0.32.3"
    assert matrix.subjects["vllm-mlx-0.7.0"].install == ("vllm-mlx==0.7.0",)
    assert releases.check_releases(matrix, recorded) == 0


def test_up_to_date_matrix_passes(recorded, monkeypatch, capsys):
    INDEX_NOW = {"mlx-lm": ["0.32.2"], "mlx-vlm": ["0.7.10"], "vllm-mlx": ["0.6.0"]}
    monkeypatch.setattr(pypi, "simple_index", lambda p: [
        {"filename": f"{p.replace('-', '_')}-{v}-py3-none-any.whl", "url": "", "yanked": False}
        for v in INDEX_NOW[p]])
    assert releases.check_releases(load_matrix(recorded), recorded) == 0

