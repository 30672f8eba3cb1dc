"""How a check's trouble is described: SkipCheck (the model or API is not in this release),
and an exception as one line that says where it was raised and whose code that was.

Imports no mlx.
"""

from __future__ import annotations

import os
import re
import traceback
from pathlib import Path


class SkipCheck(Exception):
    """Raised by a check when its own look finds a model or API does not exist in this release."""


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
