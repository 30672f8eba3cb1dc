"""The state of one subject process's run, shared by the plugin's hooks and its fixtures."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.records.cell import Borrowed, CellDoc
from mlxcompat.records.files import append_row, rows_journal, write_json_atomic
from mlxcompat.records.names import VERDICTS
from mlxcompat.records.need import NeedRecord
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry
from mlxcompat.spec import SubjectRun


@dataclass
class RunState:
    """This process's run: its spec, the document it writes, and progress counters."""

    spec: SubjectRun
    registry: Registry
    device: dict[str, Any]
    doc: CellDoc
    broken: str = ""  # why the subject cannot be measured ("" when its patches applied)
    counts: dict[tuple[str, str], Counter] = field(default_factory=dict)
    total: Counter = field(default_factory=Counter)
    group: tuple[str, str] | None = None
    clock: dict[str, float] = field(default_factory=dict)
    need: NeedRecord | None = None
    borrowed: Borrowed | None = None  # its behaviour rows are another's (mlxcompat.borrow)
    journal: Any = None  # the rows file (records.files.read_document reads both)

    def save(self) -> None:
        write_json_atomic(Path(self.spec.out), self.doc.to_json())

    def line(self, text: str) -> None:
        print(f"\n[mlxcompat] {self.spec.cell} {self.spec.subject}: {text}", flush=True)

    def append(self, item: pytest.Item, result: ResultRow) -> None:
        """Record one row of `item`: appended to the rows journal at once (a crash keeps what
        ran); the whole document is rewritten when its (check, model) group ends."""
        if self.journal is None:
            self.journal = rows_journal(Path(self.spec.out)).open("w", encoding="utf-8")
        append_row(self.journal, result.model_dump(by_alias=True))
        self.doc.results.append(result)
        item.stash[RECORDED] = True
        group = (result.check, result.model)
        if self.group not in (None, group):
            self.flush_group()
        self.group = group
        self.counts.setdefault(group, Counter())[result.verdict] += 1
        self.total[result.verdict] += 1

    def flush_group(self) -> None:
        """One progress line per finished (check, model) group, with running totals."""
        if self.group is None:
            return
        self.save()
        check, model = self.group
        self.line(f"{check} {model or '-'}: {_counts(self.counts[self.group])} | total "
                  f"{_counts(self.total)}")
        self.group = None


def _counts(counter: Counter) -> str:
    return " ".join(f"{v}={counter.get(v, 0)}" for v in VERDICTS)


_STATE = pytest.StashKey[RunState]()
_RECORDED = pytest.StashKey[bool]()


STATE = pytest.StashKey[RunState]()
RECORDED = pytest.StashKey[bool]()  # the test wrote its row


def state_of(config: pytest.Config) -> RunState | None:
    return config.stash.get(STATE, None)
