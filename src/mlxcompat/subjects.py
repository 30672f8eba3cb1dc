"""Subjects: whose patches are active in a run. Each runs in its own process.

A subject maps patch roles (`mamba`, `mamba-legacy`, `glm4v`) to `module:function` entry
points. The status of a call is taken from what it returned when that is a status object
(ours), and otherwise inferred from which patch targets it replaced.
"""

from __future__ import annotations

import importlib
import logging
from dataclasses import dataclass, field
from typing import Any

from mlxcompat.drivers import targets


@dataclass(frozen=True)
class Subject:
    """A named set of patch entry points, and how to install the package that holds them."""

    name: str
    entry_points: dict[str, str] = field(default_factory=dict)
    install: str | None = None


BUILTIN_SUBJECTS: dict[str, Subject] = {
    "none": Subject("none"),
    "mlxcompat": Subject(
        "mlxcompat",
        {
            "mamba": "mlxcompat.patches.mamba_cache:ensure_mamba_support",
            "glm4v": "mlxcompat.patches.glm4v_moe:ensure_glm4v_support",
        },
    ),
    "vllm-mlx": Subject(
        "vllm-mlx",
        {
            "mamba": "vllm_mlx.utils.mamba_cache:ensure_mamba_support",
            "glm4v": "vllm_mlx.patches.glm4v_moe_mllm:patch_glm4v_moe_for_batching",
        },
    ),
    "vllm-mlx-legacy": Subject(
        "vllm-mlx-legacy",
        {"mamba-legacy": "vllm_mlx.utils.mamba_cache:patch_mlx_lm_for_mamba"},
    ),
}


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def _load(entry_point: str) -> Any:
    module, _, func = entry_point.partition(":")
    return getattr(importlib.import_module(module), func)


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
    except (ImportError, AttributeError) as exc:
        root.removeHandler(capture)
        root.setLevel(old_level)
        return {**row, "status": "unavailable", "detail": f"{type(exc).__name__}: {exc}"}
    try:
        returned = func()
    except Exception as exc:
        return {**row, "status": "error", "detail": f"{type(exc).__name__}: {exc}"}
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


def apply_subject(subject: Subject) -> list[dict[str, Any]]:
    """Activate every entry point of `subject` in this process, in declaration order."""
    return [apply_entry_point(subject.name, r, ep) for r, ep in subject.entry_points.items()]
