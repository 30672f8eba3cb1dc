"""The installability check can fail: on macOS 13 (uv's default target) mlx >= 0.32.3 has no
wheel, and the check names the cell and the label. Needs uv and PyPI."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from mlxcompat.installable import resolve_one, table
from mlxcompat.matrix import load_matrix

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_a_cell_that_would_not_install_on_a_label_is_named() -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    cell = matrix.cell("mlx-vlm-0.7.10")  # mlx 0.32.4
    old = resolve_one(matrix, cell, "macos-13-xlarge", "metal")
    assert not old.ok and old.macos == "13.0" and "mlx" in old.error
    new = resolve_one(matrix, cell, "macos-15", "metal")
    assert new.ok and new.pins["mlx"] == "0.32.4" and new.pins["mlx-vlm"] == "0.7.10"
    text = table([old, new], 1.0, "3.11")
    assert "| mlx-vlm-0.7.10 | macos-13-xlarge | NOT INSTALLABLE:" in text
    assert "1 installable, 1 not" in text
