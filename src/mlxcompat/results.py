"""Verdicts, check results and the cell JSON (schema 1) with atomic writes.

Imports no mlx: the report side reads these files without any MLX installed.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import traceback
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Literal

SCHEMA = 1
Verdict = Literal["pass", "fail", "error", "skip"]
VERDICTS: tuple[str, ...] = ("pass", "fail", "error", "skip")


@dataclass
class CheckResult:
    """One verdict of one check for one (mode, model, subject)."""

    check: str
    verdict: Verdict
    mode: str = ""
    model: str = ""
    subject: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    detail: str = ""
    expected: str | None = None
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class SkipCheck(Exception):
    """Raised inside a check when it does not apply here; becomes a `skip` with the reason."""


_OWN_PACKAGES = ("mlx_lm", "mlx_vlm", "mlx")


def describe_exception(exc: BaseException) -> str:
    """`Type: message (at file:line in func)`, naming the innermost mlx_lm / mlx_vlm frame.

    The innermost upstream frame says which release API broke, which is what a maintainer
    needs; the harness's own frames are noise there.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    for frame in reversed(frames):
        parts = Path(frame.filename).parts
        if any(p in _OWN_PACKAGES for p in parts):
            idx = max(i for i, p in enumerate(parts) if p in _OWN_PACKAGES)
            where = f" (at {'/'.join(parts[idx:])}:{frame.lineno} in {frame.name})"
            break
    if not where and frames:
        last = frames[-1]
        where = f" (at {Path(last.filename).name}:{last.lineno} in {last.name})"
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {message}{where}"


_SITE = re.compile(r"/\S*?/site-packages/")


def strip_site_paths(text: str) -> str:
    """Drop venv-specific prefixes (.../site-packages/) so equal errors read equal."""
    return _SITE.sub("", text)


def short_error(exc: BaseException) -> str:
    """`Type: first line of the message`, without venv paths."""
    lines = str(exc).strip().splitlines()
    return strip_site_paths(f"{type(exc).__name__}: {lines[0] if lines else ''}")


def write_json_atomic(path: Path, data: Any) -> None:
    """Write JSON to a temp file in the same folder, then rename: no reader sees half a file."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1, sort_keys=False, default=str)
            fh.write("\n")
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make reports unreadable to others
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def empty_cell(cell: str) -> dict[str, Any]:
    """A cell document with every section present, so partial runs still render."""
    return {
        "schema": SCHEMA,
        "cell": cell,
        "env": {},
        "install": {"status": "ok", "seconds": None, "log_tail": ""},
        "results": [],
        "patches": [],
        "bench": [],
    }
