"""Verdicts, check results and the cell JSON (schema 2) with atomic writes.

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

SCHEMA = 2
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
    """Raised by the harness's own probe when a model or API does not exist in this release."""


_UPSTREAM = ("mlx_lm", "mlx_vlm", "mlx")
# Folders of the code under test in this process (the active subject's modules): an error
# raised there is the subject's own, however deep in upstream code it was called from.
_subject_code: tuple[str, ...] = ()


def set_subject_code(folders: tuple[str, ...]) -> None:
    global _subject_code
    _subject_code = tuple(str(Path(f).resolve()) for f in folders)


def add_subject_code(folder: str) -> None:
    set_subject_code(tuple(dict.fromkeys([*_subject_code, folder])))


def _where(frame: traceback.FrameSummary) -> str:
    path = str(Path(frame.filename).resolve())
    for folder in _subject_code:
        if path.startswith(folder + os.sep):
            return f"{Path(folder).name}/{path[len(folder) + 1:]}:{frame.lineno} in {frame.name}"
    parts = Path(frame.filename).parts
    own = [i for i, p in enumerate(parts) if p in (*_UPSTREAM, "mlxcompat", "site-packages")]
    start = own[-1] + (parts[own[-1]] == "site-packages") if own else len(parts) - 1
    return f"{'/'.join(parts[start:])}:{frame.lineno} in {frame.name}"


def _is_upstream(frame: traceback.FrameSummary) -> bool:
    return any(p in _UPSTREAM for p in Path(frame.filename).parts)


def _is_subject(frame: traceback.FrameSummary) -> bool:
    path = str(Path(frame.filename).resolve())
    return any(path == f or path.startswith(f + os.sep) for f in _subject_code)


def describe_exception(exc: BaseException) -> str:
    """`Type: message (at <innermost frame>[; innermost upstream: <frame>])`.

    The innermost frame says where it was raised; when that is the active subject's own
    code, the detail says so, so a patch's bug never reads as upstream's. The innermost
    mlx / mlx_lm / mlx_vlm frame says which release API was involved.
    """
    frames = traceback.extract_tb(exc.__traceback__)
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    head = f"{type(exc).__name__}: {message}"
    if not frames:
        return head
    inner = frames[-1]
    upstream = next((f for f in reversed(frames) if _is_upstream(f)), None)
    if _is_subject(inner):
        where = f"raised in the subject's own code at {_where(inner)}"
    else:
        where = f"at {_where(inner)}"
    if upstream is not None and upstream is not inner:
        where += f"; innermost upstream frame {_where(upstream)}"
    return f"{head} ({where})"


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
    """A cell document with every section present; `complete` turns true only at the end."""
    return {
        "schema": SCHEMA,
        "cell": cell,
        "complete": False,
        "run_id": "",
        "env": {},
        "install": {"status": "ok", "seconds": None, "log_tail": ""},
        "subjects": {},
        "results": [],
        "patches": [],
        "bench": [],
    }


def error_row(check: str, subject: str, detail: str, mode: str = "", model: str = "",
              **metrics: Any) -> dict[str, Any]:
    return CheckResult(check, "error", mode, model, subject, dict(metrics), detail).to_json()
