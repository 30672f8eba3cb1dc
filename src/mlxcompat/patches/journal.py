"""Reversible, atomic, thread-safe attribute replacement for runtime patches.

Every replacement is journalled with the object it replaced (or its absence) and the object
it installed. The journal never replaces an attribute twice: while it holds an entry for
`owner.name`, a second `replace` or `wrap` of it does nothing and returns False, so two
threads (or two entry points) can never stack our wrapper on our own wrapper.

What is installed now is read by identity, never from a marker: each entry is `ours` (our
object is installed), `restored` (the original is back: someone else undid us) or `foreign`
(neither: another patch sits on top of ours). `undo` puts back the original only where our
object is still installed, newest first, and leaves another patch's objects where they are.
`atomic` wraps a group of replacements: if anything raises part-way, what the group had
replaced is restored before the error propagates, so a patch is never left half-applied.
Self-contained (stdlib only) so a server can vendor the patch modules as they are.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

_MISSING = object()
Standing = Literal["ours", "restored", "foreign"]


def _own(owner: Any) -> dict[str, Any]:
    return vars(owner)


@dataclass(frozen=True)
class Entry:
    """One replacement: `owner.name` held `original` (or nothing) and we put `installed`."""

    owner: Any
    name: str
    original: Any
    installed: Any

    @property
    def label(self) -> str:
        return f"{getattr(self.owner, '__name__', type(self.owner).__name__)}.{self.name}"

    def current(self) -> Any:
        return _own(self.owner).get(self.name, _MISSING)

    def standing(self) -> Standing:
        now = self.current()
        if now is self.installed:
            return "ours"
        return "restored" if now is self.original else "foreign"


def describe(obj: Any) -> str:
    """Where an installed object's code lives (a wrapper's copied `__qualname__` would name
    what it wraps, so the code object is asked first)."""
    func = getattr(obj, "__func__", obj)
    code = getattr(func, "__code__", None)
    if code is not None:
        module = getattr(func, "__module__", "?")
        return f"{code.co_qualname} ({code.co_filename.rsplit('/', 1)[-1]}, module {module})"
    return repr(obj)[:80]


class Journal:
    """The replacements one patch made, in order; one lock guards every read and write."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []
        self.lock = threading.RLock()

    def entry(self, owner: Any, name: str) -> Entry | None:
        with self.lock:
            return next((e for e in self._entries if e.owner is owner and e.name == name), None)

    def replace(self, owner: Any, name: str, new: Any) -> bool:
        """Set `owner.name = new`, remembering what its own dict held; False (and nothing
        done) when this journal already replaced that attribute."""
        return self.wrap(owner, name, lambda _current: new)

    def wrap(self, owner: Any, name: str, make: Callable[[Any], Any]) -> bool:
        """Set `owner.name = make(current)`, where current is the owner's own object (or
        the inherited one, or None); the same once-only rule as `replace`."""
        with self.lock:
            if self.entry(owner, name) is not None:
                return False
            original = _own(owner).get(name, _MISSING)
            new = make(getattr(owner, name, None) if original is _MISSING else original)
            self._entries.append(Entry(owner, name, original, new))
            setattr(owner, name, new)
            return True

    def standings(self) -> list[tuple[Entry, Standing]]:
        with self.lock:
            return [(e, e.standing()) for e in self._entries]

    def undo(self) -> list[str]:
        """Put back every original whose replacement is still ours, newest first; forget
        the rest. Returns the attributes another patch holds now (left as they are)."""
        return self._rewind(0)

    def _rewind(self, mark: int) -> list[str]:
        left = []
        with self.lock:
            while len(self._entries) > mark:
                entry = self._entries.pop()
                standing = entry.standing()
                if standing == "foreign":
                    left.append(entry.label)
                if standing != "ours":
                    continue
                if entry.original is _MISSING:
                    with contextlib.suppress(AttributeError):
                        delattr(entry.owner, entry.name)
                else:
                    setattr(entry.owner, entry.name, entry.original)
        return left

    def __bool__(self) -> bool:
        return bool(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[Journal]:
        """Replacements made inside are all undone if the block raises (the lock is held
        throughout, so no other thread sees the group half-made)."""
        with self.lock:
            mark = len(self._entries)
            try:
                yield self
            except BaseException:
                self._rewind(mark)
                raise
