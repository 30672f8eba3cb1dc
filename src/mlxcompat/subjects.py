"""Apply a subject's patch entry points in this process and observe what each one did.

Subjects are declared in matrix.yaml (name -> role -> `module:function`). The status of a
call is taken from what it returned when that is a status object (ours), and otherwise
inferred from which patch targets it replaced, since upstream entry points return nothing
useful.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Mapping
from typing import Any

from mlxcompat.drivers import targets
from mlxcompat.results import short_error


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _load(entry_point: str) -> Any:
    module, _, func = entry_point.partition(":")
    return getattr(importlib.import_module(module), func)


def _package_missing(exc: Exception, entry_point: str) -> bool:
    """The subject's package is not installed, as opposed to its module failing to import."""
    top = entry_point.split(".", 1)[0].split(":", 1)[0]
    return isinstance(exc, ModuleNotFoundError) and exc.name is not None and (
        exc.name == top or exc.name.startswith(top + ".")
    )


def _infer(returned: Any, replaced: list[str], had_targets: bool) -> tuple[str, str]:
    status = getattr(returned, "status", None)
    if isinstance(status, str):
        return status, str(getattr(returned, "detail", ""))
    if replaced:
        return "applied", ""
    if returned is False:
        return "not-applicable", "entry point returned False"
    if not had_targets:
        return "not-applicable", "no patch target in this release"
    return "skipped", "nothing was replaced"


def apply_entry_point(subject: str, role: str, entry_point: str) -> dict[str, Any]:
    """Call one entry point and observe it; returns a `patches` row of the cell JSON."""
    row: dict[str, Any] = {"subject": subject, "patch": role, "entry_point": entry_point}
    before = targets.snapshot(role)
    capture = _Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    try:
        func = _load(entry_point)
        returned = func()
    except Exception as exc:
        status = "unavailable" if _package_missing(exc, entry_point) else "error"
        return {**row, "status": status, "detail": short_error(exc)}
    finally:
        root.removeHandler(capture)
        root.setLevel(old_level)
    replaced = targets.changed(before, targets.snapshot(role))
    status, detail = _infer(returned, replaced, targets.present(before))
    observed = "replaced " + ", ".join(replaced) if replaced else "replaced nothing"
    return {
        **row,
        "status": status,
        "detail": "; ".join(x for x in (detail, observed) if x),
        "returned": repr(returned)[:200],
        "log": capture.lines[-5:],
    }


def apply_subject(name: str, entry_points: Mapping[str, str]) -> list[dict[str, Any]]:
    """Activate every entry point of subject `name` in this process, in declaration order."""
    return [apply_entry_point(name, role, ep) for role, ep in entry_points.items()]
