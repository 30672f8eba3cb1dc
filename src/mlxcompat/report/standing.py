"""How a subject stands on one cell, in one short word a grid can show without an emoji font.

The word is the worst of its rows' outcome, fault and severity (report/fault.py):

- `NEW!`   an outcome matrix.yaml does not record (unexpected): look first;
- `n/r`    the subject cannot run here (does not install, import or apply);
- `own`    the subject's own fault: output it breaks or makes worse, or a crash in its code;
- `up`     upstream gives wrong tokens or crashes, and the subject does not fix it;
- `drift`  only upstream numeric drift remains (greedy tokens equal, |Δ| over the tolerance);
- `ok`     every check passes;
- `·`      not run here.

Suffixes: `+c` a patch contract fails here (patch status or idempotence: the patch is applied
where not needed, not applied where needed, or not idempotent); `*` the cell is outside the
subject's declared dependency range (measured anyway); `~` most of its rows were skipped
(the model or API is not in this release), so `ok` says little.
"""

from __future__ import annotations

from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from mlxcompat.records.names import BAD
from mlxcompat.records.report import ReportCell, ReportRow
from mlxcompat.report.fault import SUBJECT_ONLY

ORDER = ("unexpected", "cannot-run", "own", "upstream", "drift", "ok", "absent")
CODE = {"unexpected": "NEW!", "cannot-run": "n/r", "own": "own", "upstream": "up",
        "drift": "drift", "ok": "ok", "absent": "·"}
MEANING = {
    "unexpected": "an outcome matrix.yaml does not record (unexpected)",
    "cannot-run": "cannot run here (does not install, import or apply)",
    "own": "the subject's own fault (output it breaks or worsens, or a crash in its code)",
    "upstream": "upstream gives wrong tokens or crashes; the subject does not fix it",
    "drift": "only upstream numeric drift (greedy tokens equal)",
    "ok": "every check passes",
    "absent": "not run here",
}
SUFFIX = {"+c": "a patch contract fails here (patch status or idempotence)",
          "*": "outside the subject's declared range (measured anyway)",
          "~": "most rows skipped here (model or API absent)"}
CONTRACT = ("patch-status", "idempotence")
SAFE = ("ok", "drift")  # nothing worse than upstream numeric drift


@dataclass(frozen=True)
class Mark:
    """One subject on one cell."""

    standing: str
    contract: bool = False
    outside: bool = False
    skipped: float = 0.0

    @property
    def code(self) -> str:
        return (CODE[self.standing] + ("+c" if self.contract else "")
                + ("*" if self.outside else "") + ("~" if self.skipped > 0.5 else ""))

    @property
    def safe(self) -> bool:
        return self.standing in SAFE


def in_range(requires: dict[str, str], cell: ReportCell) -> bool:
    """Does the cell's mlx-lm / mlx-vlm satisfy the subject's declared requirements? A
    requirement on a package the cell does not install does not count against it."""
    packages = {**cell.env.packages, **cell.pins}
    for name, spec in requires.items():
        if name not in packages:
            continue
        try:
            if Version(str(packages[name])) not in SpecifierSet(spec):
                return False
        except (InvalidSpecifier, InvalidVersion):
            continue
    return True


def standing(rows: list[ReportRow]) -> str:
    """The worst word of these rows (one subject, one cell); see the module docstring."""
    if not rows:
        return "absent"
    if any(not r.outcome.expected for r in rows):
        return "unexpected"
    behaviour = [r for r in rows if r.check not in CONTRACT]
    core = [r for r in behaviour if r.check not in SUBJECT_ONLY]
    if (core and all(r.severity == "cannot-run" for r in core)) or (
            not core and any(r.severity == "cannot-run" for r in behaviour)):
        return "cannot-run"
    bad = [r for r in behaviour if r.verdict in BAD]
    if any(r.fault in ("subject", "subject-worsened") for r in bad):
        return "own"
    if any(r.severity in ("wrong-tokens", "crash", "cannot-run") for r in bad):
        return "upstream"
    if bad:
        return "drift"
    return "ok"


def mark(rows: list[ReportRow], requires: dict[str, str], cell: ReportCell) -> Mark:
    if not rows:
        return Mark("absent")
    skipped = sum(1 for r in rows if r.verdict == "skip") / len(rows)
    return Mark(standing(rows), any(r.check in CONTRACT and r.verdict in BAD for r in rows),
                not in_range(requires, cell), skipped)
