"""Headless Chromium for the report: a rendered DOM (for tests) and a PNG screenshot."""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "chrome")
# Without these, Chromium keeps trying to reach Google's hosts, which a closed network refuses.
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars")


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


# Headless Chromium paints nothing below the top of a scrolled page in --screenshot mode, so a
# "scrolled" shot moves the page up by the element's offset instead (details opened first).
_SHIFT = """<script>window.addEventListener("load", function () {{
  var t = document.getElementById("{at}"); if (!t) return;
  for (var p = t.parentElement; p; p = p.parentElement) if (p.tagName === "DETAILS") p.open = true;
  document.body.style.marginTop = (-t.getBoundingClientRect().top + 8) + "px";
}});</script>"""


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 900, at: str = "") -> Path:
    """A PNG of the page as a reader sees it: its top, or from the element `at` down."""
    target = page
    if at:
        target = page.with_name(f".{page.stem}.shot.html")
        target.write_text(page.read_text(encoding="utf-8").replace(
            "</body>", _SHIFT.format(at=at) + "</body>"), encoding="utf-8")
    try:
        _run([f"--screenshot={png.resolve()}", f"--window-size={width},{height}",
              "--virtual-time-budget=3000", target.resolve().as_uri()])
    finally:
        if at:
            target.unlink(missing_ok=True)
    return png
