"""Apply a subject's patch entry points in this process and observe what each one did.

The status of every call, ours included, comes from observation: a snapshot of the role's
target modules (every module attribute and each class's own `vars()` entries, so an
in-place method replacement counts) before and after the call. What the entry point returned
is its self-report, recorded beside the observation; the patch-status check fails a
disagreement. Files of the installed mlx / mlx-lm / mlx-vlm are watched too (by stat, around
each call): a patch that writes into them changes every later process of the environment.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mlxcompat import footprint
from mlxcompat.drivers import process_state
from mlxcompat.drivers.installed import package_folders, stat_changes, stat_files, watch_alone
from mlxcompat.errors import add_subject_code, describe_exception, short_error
from mlxcompat.records.names import Observed
from mlxcompat.records.patches import Idempotence, PatchRow
from mlxcompat.registry import RoleDecl

Snapshot = dict[str, Any]
_ABSENT = object()
# Entries the interpreter itself adds to classes (copy/pickle bookkeeping), never a patch.
_RUNTIME = ("__dict__", "__weakref__", "__doc__", "__slotnames__", "_abc_impl")


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def snapshot(modules: tuple[str, ...]) -> Snapshot:
    """Identity of every attribute of the target modules and of their classes' own entries.

    A module that cannot be imported is recorded as absent (its key maps to _ABSENT).
    """
    found: Snapshot = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ImportError:
            found[name] = _ABSENT
            continue
        found[name] = module
        for attr, value in list(vars(module).items()):
            found[f"{name}:{attr}"] = value
            if inspect.isclass(value) and getattr(value, "__module__", None) == name:
                for key, member in list(vars(value).items()):
                    if key not in _RUNTIME:
                        found[f"{name}:{attr}.{key}"] = member
    return found


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Targets added, removed or bound to another object."""
    keys = list(dict.fromkeys([*before, *after]))
    return [k for k in keys if before.get(k, _ABSENT) is not after.get(k, _ABSENT)]


def targets_present(before: Snapshot, role: RoleDecl) -> bool:
    return any(before.get(m, _ABSENT) is not _ABSENT for m in role.targets)


def _claim(returned: Any) -> tuple[str, ...]:
    """What the entry point says it did, as the statuses that would agree with it."""
    status = getattr(returned, "status", None)
    if status == "replaced":  # another patch sits on ours: the targets show changes, or none
        return ("applied", "skipped")
    if isinstance(status, str):
        return (status,)
    if returned is True:
        return ("applied", "skipped")
    if returned is False:
        return ("not-applicable", "unavailable")
    return ()


def _observed(replaced: list[str], present: bool) -> tuple[Observed, str]:
    if replaced:
        shown = ", ".join(replaced[:8]) + (f" and {len(replaced) - 8} more"
                                          if len(replaced) > 8 else "")
        return "applied", f"changed {shown}"
    if not present:
        return "not-applicable", "no target module of this role is installed"
    return "skipped", "changed nothing"


def _load(entry_point: str) -> Any:
    module, _, func = entry_point.partition(":")
    return getattr(importlib.import_module(module), func)


def subject_code(entry_points: Mapping[str, str]) -> tuple[str, ...]:
    """Folders holding the subject's own code (for honest error attribution)."""
    folders = []
    for ep in entry_points.values():
        module = sys.modules.get(ep.partition(":")[0])
        path = getattr(module, "__file__", None)
        if not path:
            continue
        top = sys.modules.get(module.__name__.split(".")[0])  # type: ignore[union-attr]
        top_path = getattr(top, "__file__", None)
        if top is not None and top.__name__ != "mlxcompat" and top_path:
            folders.append(str(Path(top_path).parent))
        else:
            folders.append(str(Path(path).parent))
    return tuple(dict.fromkeys(folders))


def import_entry_point(entry_point: str) -> tuple[Any, str]:
    """(callable, "") or (None, the import error). The module's folder becomes the subject's
    own code, so an error raised there is attributed to the subject."""
    try:
        func = _load(entry_point)
    except Exception as exc:
        return None, short_error(exc)
    for folder in subject_code({"": entry_point}):
        add_subject_code(folder)
    return func, ""


def _call(func: Any) -> tuple[Any, BaseException | None, list[str]]:
    """Call an entry point with the root logger captured: (returned, raised, log lines)."""
    capture = _Capture()
    root = logging.getLogger()
    old_level = root.level
    root.addHandler(capture)
    root.setLevel(logging.DEBUG)
    try:
        return func(), None, capture.lines
    except Exception as exc:
        return None, exc, capture.lines
    finally:
        root.removeHandler(capture)
        if root.level == logging.DEBUG:  # ours; a level the entry point set stays (observed)
            root.setLevel(old_level)


def apply_entry_point(subject: str, role: RoleDecl, entry_point: str) -> PatchRow:
    """Call one entry point, observe it, then check it is idempotent and reversible.

    Returns a `PatchRow`: the observed status, the self-report (`claim`) and whether they
    agree, what changed (installed files of mlx / mlx-lm / mlx-vlm included, as
    `file:<path>`), and the idempotence record (second call, unpatch, re-apply). No other
    subject of the environment is inside its own call meanwhile (`watch_alone`).
    """
    with watch_alone():
        return _apply_watched(subject, role, entry_point)


def _apply_watched(subject: str, role: RoleDecl, entry_point: str) -> PatchRow:
    row: dict[str, Any] = {"subject": subject, "role": role.name, "entry_point": entry_point}
    folders = package_folders()
    files = stat_files(folders)
    before = snapshot(role.targets)
    state = process_state.take()
    wide = footprint.take()
    func, import_error = import_entry_point(entry_point)
    if func is None:
        wrote = stat_changes(files, stat_files(folders))
        return PatchRow(**row, observed="error", imported=False,
                        changed=changed(before, snapshot(role.targets)) + _files(wrote),
                        detail=f"entry point does not import: {import_error}",
                        idempotence=Idempotence(wrote_files=wrote) if wrote else None,
                        process=process_state.compare(state, process_state.take()))
    returned, raised, log = _call(func)
    row["process"] = process_state.compare(state, process_state.take())
    row["process"].beyond_targets = footprint.outside(
        footprint.changes(wide, footprint.take()), role.targets)
    after = snapshot(role.targets)
    replaced = changed(before, after) + _files(stat_changes(files, stat_files(folders)))
    if raised is not None:  # called again: does it now succeed, raise again, change more?
        _, again, _ = _call(func)
        return PatchRow(**row, observed="error", changed=replaced,
                        detail=describe_exception(raised), log=log[-5:],
                        idempotence=Idempotence(
                            raised=True, left_changed=replaced, wrote_files=_wrote(replaced),
                            second_call_raised=_text(again),
                            second_call_changed=changed(after, snapshot(role.targets))))
    observed, seen = _observed(replaced, targets_present(before, role))
    claim = _claim(returned)
    reported = getattr(returned, "detail", "")
    record = _idempotence(func, entry_point, role, before, after, replaced)
    record.wrote_files = stat_changes(files, stat_files(folders))
    return PatchRow(
        **row, observed=observed, claim=list(claim), agrees=not claim or observed in claim,
        changed=replaced, detail="; ".join(x for x in (seen, str(reported)) if x),
        returned=repr(returned)[:200], log=log[-5:], idempotence=record)


def _files(paths: list[str]) -> list[str]:
    return [f"file:{p}" for p in paths]


def _wrote(changes: list[str]) -> list[str]:
    return [c.removeprefix("file:") for c in changes if c.startswith("file:")]


def _idempotence(func: Any, entry_point: str, role: RoleDecl, before: Snapshot,
                 after: Snapshot, replaced: list[str]) -> Idempotence:
    """Call again (nothing may change); where the module offers `unpatch`, undo (everything
    restored by identity) and apply once more (the same targets change again)."""
    _, raised, _ = _call(func)
    second = snapshot(role.targets)
    record = Idempotence(second_call_raised=_text(raised),
                         second_call_changed=changed(after, second))
    undo = getattr(sys.modules.get(entry_point.partition(":")[0]), "unpatch", None)
    record.unpatch_offered = callable(undo)
    if callable(undo):
        _, raised, _ = _call(undo)
        undone = snapshot(role.targets)
        record.unpatch_raised = _text(raised)
        record.not_restored = changed(before, undone)
        _, raised, _ = _call(func)
        again = changed(before, snapshot(role.targets))
        record.reapply_raised = _text(raised)
        record.reapply_differs = sorted(set(again) ^ set(replaced))
    return record


def _text(exc: BaseException | None) -> str:
    return describe_exception(exc) if exc is not None else ""


def apply_subject(name: str, entry_points: Mapping[str, str],
                  roles: Mapping[str, RoleDecl]) -> list[PatchRow]:
    """Activate every entry point of subject `name` in this process, in declaration order."""
    return [apply_entry_point(name, roles[role], ep) for role, ep in entry_points.items()]
