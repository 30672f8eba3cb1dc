"""Fixtures shared by the report's tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from cellkit import standard_cells, write


@pytest.fixture
def raw(tmp_path: Path) -> Path:
    """A reports/raw folder holding the two standard cells' JSONs."""
    return write(tmp_path / "reports" / "raw", standard_cells())
