"""Reversible, atomic attribute replacement for runtime patches.

Every replacement is journalled with the object it replaced (or its absence); `undo` puts
back every original by identity, newest first. `atomic` wraps a group of replacements: if
anything raises part-way, what the group had already replaced is restored before the error
propagates, so a patch is never left half-applied. Self-contained (stdlib only) so a server
can vendor the patch modules as they are.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

_MISSING = object()


class Journal:
    """The replacements one patch made, in order."""

    def __init__(self) -> None:
        self._entries: list[tuple[Any, str, Any]] = []

    def replace(self, owner: Any, name: str, new: Any) -> None:
        """Set `owner.name = new`, remembering what was there (in the owner's own dict)."""
        own = vars(owner) if isinstance(owner, type) else owner.__dict__
        self._entries.append((owner, name, own.get(name, _MISSING)))
        setattr(owner, name, new)

    def undo(self) -> None:
        """Restore every replaced attribute by identity, newest first."""
        self._rewind(0)

    def _rewind(self, mark: int) -> None:
        while len(self._entries) > mark:
            owner, name, original = self._entries.pop()
            if original is _MISSING:
                with contextlib.suppress(AttributeError):
                    delattr(owner, name)
            else:
                setattr(owner, name, original)

    def __bool__(self) -> bool:
        return bool(self._entries)

    @contextlib.contextmanager
    def atomic(self) -> Iterator[Journal]:
        """Replacements made inside are all undone if the block raises."""
        mark = len(self._entries)
        try:
            yield self
        except BaseException:
            self._rewind(mark)
            raise
