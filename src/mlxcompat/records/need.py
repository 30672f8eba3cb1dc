"""The need probe's record: where this release needs a patch, found in a clean process."""

from __future__ import annotations

from pydantic import Field

from mlxcompat.records.base import Record


class Need(Record):
    """Whether one capability a role patches is broken upstream, and what was found.

    `needed` is None when the probe could not decide (it raised, or nothing ran).
    `findings` maps each family / operation tried to `absent`, `correct`, `present` or
    `broken: <error or Δ>`.
    """

    needed: bool | None
    why: str = ""
    findings: dict[str, str] = Field(default_factory=dict)


class NeedRecord(Record):
    """Per capability (the `need` of a role in builtin.yaml): its `Need`; `error` when the
    probe's process wrote nothing."""

    needs: dict[str, Need] = Field(default_factory=dict)
    error: str = ""

    def for_capability(self, name: str) -> Need:
        """The need of `name`, undecided (with the reason) when the record has none."""
        found = self.needs.get(name)
        if found is not None:
            return found
        return Need(needed=None, why=self.error or
                    f"the need probe recorded nothing for {name!r}")
