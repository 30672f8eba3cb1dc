"""compat.html in a real headless Chromium, as a reader sees it on a laptop (1280 × 900) and a
phone (390 × 844), with no emoji font installed: the probe (report/browser.py) measures what is
on screen once the page has loaded at an address, so each test reads geometry, not markup."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from cellkit import matrix, standard_cells, write
from pagekit import LONG, build_page

from mlxcompat.matrix import parse_matrix
from mlxcompat.report.browser import SIZES, find_browser, probe, rendered_dom, screenshots
from mlxcompat.report.build import ReportPaths, build_report

pytest.importorskip("jinja2")
pytest.importorskip("matplotlib")
# CI (.ci/run) installs Debian's Chromium and sets MLXCOMPAT_REQUIRE_BROWSER=1: there a
# missing browser fails these tests instead of skipping them.
pytestmark = pytest.mark.skipif(
    find_browser() is None and os.environ.get("MLXCOMPAT_REQUIRE_BROWSER") != "1",
    reason="no Chromium installed (.ci/run installs Debian's)")
INSTALLED = f"as-installed-{LONG} (lm 0.31.3)"
# Emoji and pictographs (✅ ❌ ⚠ 🚫 …) and the emoji variation selector: a browser without an
# emoji font draws every one of them as the same empty box.
EMOJI = re.compile("[\u2600-\u27bf\u2b00-\u2bff\ufe0f\U0001f000-\U0001faff]")


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_page(tmp_path_factory.mktemp("page"))


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    raw = write(tmp_path_factory.mktemp("report") / "raw", standard_cells())
    build_report(ReportPaths.under(raw), parse_matrix(matrix()))
    return raw.parent / "compat.html"


def _table(seen: dict, table_id: str) -> dict:
    return next(t for t in seen["tables"] if t["id"] == table_id)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}px")
def test_a_note_link_keeps_its_address_and_lands_below_the_filter_bar(
        page: Path, size: tuple[int, int]) -> None:
    seen = probe(page, "note-10", *size)
    assert seen["hashNow"] == "#note-10", "the page rewrote the address it was opened at"
    target = seen["target"]
    assert target["found"] and not target["covered"], target
    assert seen["barBottom"] <= target["top"] < seen["innerHeight"], (seen["barBottom"], target)


@pytest.mark.parametrize("fragment", ["at=matrix-cache-contract", "matrix-cache-contract"])
@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}px")
def test_a_link_to_a_folded_table_opens_it_and_shows_its_header_row(
        page: Path, fragment: str, size: tuple[int, int]) -> None:
    seen = probe(page, fragment, *size)
    target = seen["target"]
    assert target["found"] and target["closedDetails"] == 0, target
    assert not target["header"]["covered"], ("the filter bar hides the header row", target)
    assert target["header"]["top"] >= seen["barBottom"], (seen["barBottom"], target)


def test_the_subject_filter_reaches_the_grid_the_pins_and_the_problems(page: Path) -> None:
    seen = probe(page, "subject=mlxcompat")
    assert seen["hashNow"] == "#subject=mlxcompat"
    assert [g["heads"] for g in seen["grids"]] == [["release", "mlxcompat"]], seen["grids"]
    kinds = seen["subjects"]
    assert any("pins" in kind for kind in kinds), f"no pin table: {sorted(kinds)}"
    for kind, subjects in kinds.items():
        for subject, (shown, total) in subjects.items():
            assert shown == (total if subject == "mlxcompat" else 0), (kind, subject)
    assert "subject=" in seen["change"]["hash"], "a filter change is not kept in the address"


def test_the_release_filter_keeps_the_resolved_rows_of_that_release(page: Path) -> None:
    seen = probe(page, "release=" + "lm%200.31.3")
    assert [g["rows"] for g in seen["grids"]] == [[INSTALLED, "lm 0.31.3"]], seen["grids"]
    parity = _table(seen, "matrix-parity")
    assert parity["heads"][-2:] == [INSTALLED, "lm 0.31.3"], parity["heads"]
    assert "latest (lm 0.32.2)" not in parity["heads"]


def test_a_phone_shows_verdicts_beside_the_sticky_labels(page: Path) -> None:
    seen = probe(page, "", 390, 844)
    assert seen["innerWidth"] == 390
    for table_id in ("grid-local", "matrix-parity"):
        table = _table(seen, table_id)
        assert table["labels"], f"{table_id} has no sticky labels"
        assert table["visible"] >= 1, (f"no verdict cell of {table_id} is visible beside its "
                                       "sticky labels", table)
        assert table["labelRight"] <= 0.7 * seen["innerWidth"], table


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}px")
def test_a_wide_table_scrolls_in_its_own_box_and_never_pans_the_page(
        page: Path, size: tuple[int, int]) -> None:
    seen = probe(page, "", *size)
    assert seen["scrollWidth"] <= seen["innerWidth"], "the whole page pans sideways"
    drift = _table(seen, "drift-mlx-lm")
    assert drift["box"] is not None, "the API-drift table has no scroll box of its own"
    assert drift["box"]["width"] <= seen["innerWidth"] < drift["box"]["scrollWidth"], drift


def test_the_page_has_no_emoji_before_or_after_its_scripts(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    found = sorted({f"U+{ord(c):04X}" for c in EMOJI.findall(text)})
    assert not found, found
    assert not EMOJI.search(rendered_dom(page))
    for word in ("ok", "drift", "up", "own"):  # marks are words, explained on the page
        assert re.search(rf">{re.escape(word)}</(?:b|span)>", text), word


def test_the_small_report_renders_its_grid_tables_and_plots(small: Path) -> None:
    dom = rendered_dom(small)
    assert re.search(r'<table class="grid[^"]*" id="grid-', dom)
    assert 'id="matrix-parity"' in dom
    assert re.search(r'<img alt="[^"]+" src="data:image/png;base64,', dom)
    assert re.search(r"\d+ of \d+ rows shown", dom)


def test_screenshots_at_both_sizes_show_the_top_the_grid_and_a_table(page: Path) -> None:
    shots = screenshots(page, {"top": "", "grid": "at=grid-local", "table": "at=matrix-parity"})
    assert [p.name for p in shots] == [f"compat-{w}-{n}.png" for w, _ in SIZES
                                       for n in ("top", "grid", "table")]
    for png, (width, height) in zip(shots, [s for s in SIZES for _ in range(3)], strict=True):
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert (int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")) == (
            width, height), png.name
    assert len({p.read_bytes() for p in shots}) == len(shots), "two shots are the same picture"
