"""compat.html in a real headless Chromium: matrix and plot present, a filter hides rows."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mlxcompat.matrix import parse_matrix
from mlxcompat.report.browser import find_browser, rendered_dom, screenshot
from mlxcompat.report.build import ReportPaths, build_report

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
pytestmark = pytest.mark.skipif(find_browser() is None,
                                reason="no Chromium installed (.ci/run installs Debian's)")

FIXTURES = Path(__file__).parent / "fixtures" / "raw"
MATRIX = {"schema": 1,
          "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
          "subjects": {"none": {}, "mlxcompat": {}},
          "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2"}]}


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = tmp_path_factory.mktemp("report") / "raw"
    shutil.copytree(FIXTURES, raw)
    build_report(ReportPaths.under(raw), parse_matrix(MATRIX))
    return raw.parent / "compat.html"


def _rows(dom: str, subject: str) -> list[str]:
    return re.findall(rf'<tr class="filterable"[^>]*data-subject="{subject}"[^>]*>', dom)


def test_matrix_table_and_plot_are_rendered(page: Path) -> None:
    dom = rendered_dom(page)
    assert 'id="matrix-parity"' in dom
    assert re.search(r'<img alt="Verdicts per release" src="data:image/png;base64,', dom)
    assert re.search(r'<img alt="Speedup per batch size \(cpu\)" src="data:image/png;base64,', dom)
    assert "rows shown" in dom
    assert all("display: none" not in row for row in _rows(dom, "none"))


def test_subject_filter_hides_other_subjects_rows(page: Path) -> None:
    dom = rendered_dom(page, "subject=mlxcompat")
    hidden, kept = _rows(dom, "none"), _rows(dom, "mlxcompat")
    assert hidden and all("display: none" in row for row in hidden)
    assert kept and all("display: none" not in row for row in kept)


def test_screenshot_is_a_png(page: Path, tmp_path: Path) -> None:
    png = screenshot(page, tmp_path / "compat.png", height=900)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
