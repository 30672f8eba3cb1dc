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


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 900, at: str = "") -> Path:
    """A PNG of the page as a reader sees it, at the top or scrolled to the element `at`."""
    url = page.resolve().as_uri() + (f"#at={at}" if at else "")
    _run([f"--screenshot={png.resolve()}", f"--window-size={width},{height}",
          "--virtual-time-budget=3000", url])
    return png
