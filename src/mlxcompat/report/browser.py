"""Headless Chromium for the report: a rendered DOM, what a reader sees (a probe's geometry),
and PNG screenshots. Only --dump-dom and --screenshot: no remote-debugging protocol needed."""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Without these, Chromium keeps trying to reach Google's hosts, which a closed network refuses.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")
SIZES = ((1280, 900), (390, 844))  # a laptop and a phone
# What `mlxcompat report --screenshot` shows: the top, the front grid and one verdict table.
SHOTS = {"top": "", "grid": "at=grid-local", "table": "at=matrix-parity"}
_PROBE = (Path(__file__).with_name("templates") / "_probe.js.j2")


def find_browser() -> str | None:
    return next((path for name in CANDIDATES if (path := shutil.which(name))), None)


def _run(args: list[str], timeout: float = 60) -> str:
    browser = find_browser()
    if browser is None:
        raise FileNotFoundError("no Chromium found (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="mlxcompat-chrome-") as profile:
        proc = subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", *args],
                              capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"chromium exited {proc.returncode}: {proc.stderr.strip()[-300:]}")
    return proc.stdout


def rendered_dom(page: Path, fragment: str = "") -> str:
    """The page's DOM after its scripts ran (e.g. with a `#subject=none` filter)."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    return _run(["--virtual-time-budget=3000", "--dump-dom", url])


# Headless Chromium lays a window out at least 500 px wide, and paints nothing below the top
# of a scrolled page in --screenshot mode; a page in a frame of the exact size has neither
# problem: it is 390 px wide when asked, and it scrolls (to a #fragment, say) and is painted
# as a reader sees it. The frame's page sends the probe's JSON up with postMessage.
_FRAME = """<!doctype html><html><body style="margin:0">
<iframe src="{src}" style="border:0;display:block;width:{w}px;height:{h}px"></iframe>
<pre id="mlxcompat-probe"></pre><script>window.addEventListener("message", function (e) {{
document.getElementById("mlxcompat-probe").textContent = e.data; }});</script></body></html>"""


def _scratch(page: Path, tag: str) -> Path:
    fd, name = tempfile.mkstemp(f".{tag}.html", f".{page.stem}.", page.parent)
    os.close(fd)
    return Path(name)


def _framed(page: Path, fragment: str, width: int, height: int, script: str,
            args: list[str]) -> str:
    """Chromium on a frame of width × height holding a copy of the page (beside it, so its
    relative links resolve) with `script` run first, before the page's own scripts can change
    the address."""
    copy, frame = _scratch(page, "copy"), _scratch(page, "frame")
    text = page.read_text(encoding="utf-8")
    head = re.search(r"<head[^>]*>", text)
    at = head.end() if head else 0
    copy.write_text(text[:at] + (f"<script>{script}</script>" if script else "") + text[at:],
                    encoding="utf-8")
    src = html.escape(copy.name + (f"#{fragment}" if fragment else ""))
    frame.write_text(_FRAME.format(src=src, w=width, h=height), encoding="utf-8")
    # --dump-dom keeps the window at 500 px at least; --screenshot sizes it to the PNG's size
    window = width if any(a.startswith("--screenshot") for a in args) else max(width, 500)
    try:
        return _run([f"--window-size={window},{height}", "--virtual-time-budget=5000", *args,
                     frame.resolve().as_uri()])
    finally:
        copy.unlink(missing_ok=True)
        frame.unlink(missing_ok=True)


def probe(page: Path, fragment: str = "", width: int = 1280, height: int = 900) -> dict[str, Any]:
    """What a reader sees once the page has loaded at this address and size: the jump target
    against the sticky bar, page overflow, each table's labels and visible verdict cells, and
    which grid rows and columns are shown (see templates/_probe.js.j2). The probe is added to
    a copy of the page, so it measures any page alike, this one's or an older one's."""
    dom = _framed(page, fragment, width, height, _PROBE.read_text(encoding="utf-8"),
                  ["--dump-dom"])
    found = re.search(r'<pre id="mlxcompat-probe">(.+?)</pre>', dom, re.S)
    if found is None:
        raise RuntimeError("the probe wrote nothing (did the page load?)")
    return dict(json.loads(html.unescape(found.group(1))))


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 900,
               fragment: str = "") -> Path:
    """A PNG of the page as a reader sees it at this size: its top, or where the address
    `#fragment` (e.g. `at=matrix-parity`) takes them."""
    _framed(page, fragment, width, height, "", [f"--screenshot={png.resolve()}"])
    return png


def screenshots(page: Path, at: dict[str, str]) -> list[Path]:
    """`<stem>-<width>-<name>.png` beside the page for each size and each `at` (name -> the
    address's fragment; "" is the top of the page)."""
    return [screenshot(page, page.with_name(f"{page.stem}-{width}-{name}.png"), width, height,
                       fragment) for width, height in SIZES for name, fragment in at.items()]
