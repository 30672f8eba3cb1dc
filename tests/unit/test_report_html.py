"""compat.html's front page says what compat.md's says (report/markdown.py is the reference):
the same banner and headline, the same pin rows, the same grid of marks, the same top problems
per subject, each as plain text once markup is taken away."""

from __future__ import annotations

import html
import re

import pytest
from pagekit import build_page

pytest.importorskip("jinja2")


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    page = build_page(tmp_path_factory.mktemp("page"))
    md = page.with_suffix(".md").read_text(encoding="utf-8")
    return md[:md.index("## Details")], page.read_text(encoding="utf-8")


def _plain_html(text: str) -> str:
    text = re.sub(r"<br>", "; ", text)
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


def _plain_md(text: str) -> str:
    text = re.sub(r"\[([^\]]+)\]\(#[^)]+\)", r"\1", text).replace("**", "").replace("`", "")
    return " ".join(html.unescape(text.replace("\\|", "|")).split())


def _md_table(md: str, heading: str) -> list[list[str]]:
    block = md[md.index(heading):].split("\n\n|", 1)[1].split("\n\n")[0]
    rows = [line.strip().strip("|").split(" | ") for line in ("|" + block).splitlines()]
    return [[_plain_md(c) for c in row] for row in rows[2:]]


def _html_rows(page: str, table_id: str) -> list[list[str]]:
    body = re.search(rf'id="{table_id}".*?<tbody>(.*?)</tbody>', page, re.S)
    assert body, table_id
    return [[_plain_html(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body.group(1), re.S)]


def test_banner_and_headline_say_the_same(pages: tuple[str, str]) -> None:
    md, page = pages
    banner = [_plain_md(line[2:]) for line in md.splitlines() if line.startswith("> ")]
    shown = re.search(r'<div id="banner"[^>]*>(.*?)</div>\n', page, re.S)
    assert shown
    assert [_plain_html(b) for b in re.findall(r"<div>(.*?)</div>", shown.group(1))] == banner
    for line in (md.split("\n\n")[2], md.split("\n\n")[3]):
        assert _plain_md(line) in _plain_html(page), line


def test_the_pin_table_and_the_grid_say_the_same(pages: tuple[str, str]) -> None:
    md, page = pages
    assert _html_rows(page, "pins-table-local") == _md_table(md, "### What to pin")
    assert _html_rows(page, "grid-local") == _md_table(md, "### Every release, every subject")


def test_the_top_problems_say_the_same(pages: tuple[str, str]) -> None:
    md, page = pages
    section = md[md.index("### Top problems per subject"):]
    section = section[:section.index("\n###", 1)] if "\n###" in section[1:] else section
    blocks = section.split("\n\n**")[1:]
    assert blocks
    for block in blocks:
        subject = block.split("**", 1)[0]
        lines = [_plain_md(line[2:]) for line in block.splitlines() if line.startswith("- ")
                 and "more in the details" not in line and "compared with" not in line]
        shown = re.search(rf'<div class="subject[^"]*" id="subject-{re.escape(subject)}"'
                          r'.*?<ul class="problems">(.*?)</ul>', page, re.S)
        assert shown, subject
        items = [_plain_html(li) for li in re.findall(r"<li>(.*?)</li>", shown.group(1), re.S)]
        assert items == lines, subject
