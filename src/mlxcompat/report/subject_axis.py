"""The subject axis: a family's releases on one cell, run-length coded, and where each
behaviour changed ("vllm-mlx ≤ 0.2.5 patches · 0.2.7+ only logs").

Read from a compat.json (its rows and patch rows) and the matrix's families; no network, no
run. Every release of a family is measured in each cell that lists it, so a change between
two neighbouring releases is exact (the family lists every release within its bounds).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

from packaging.version import Version

from mlxcompat.families import Family
from mlxcompat.records.names import BAD
from mlxcompat.records.report import CompatDoc, ReportPatch, ReportRow
from mlxcompat.records.rows import About

# What an entry point did, in a server maintainer's words (its observed status).
DOES = {"applied": "patches", "skipped": "changes nothing", "not-applicable": "n/a",
        "error": "raises"}


@dataclass
class Run:
    word: str  # what these releases do on this cell
    releases: list[str]
    span: str  # "≤ 0.2.5", "0.2.6", "0.2.7–0.4.1", "0.5.0+"


@dataclass
class Change:
    """Rows (or entry points: `patch mamba`) whose verdict moved between two neighbouring
    releases of the family, all the same way."""

    release: str  # the first release with `after`
    previous: str  # the release before it
    before: str
    after: str
    abouts: list[str] = field(default_factory=list)  # `parity mamba2 history`, `patch mamba`

    def text(self, shown: int = 3) -> str:
        more = f" and {len(self.abouts) - shown} more" if len(self.abouts) > shown else ""
        return (f"{self.previous} → {self.release}: {self.before} → {self.after} in "
                f"{', '.join(self.abouts[:shown])}{more}")


@dataclass
class SubjectAxis:
    family: str
    cell: str
    behaviour: list[Run]  # what each release's entry points do
    standing: list[Run]  # ok / fail counts per release
    changes: list[Change] = field(default_factory=list)
    shared: dict[str, str] = field(default_factory=dict)  # release -> release whose run it took

    def behaviour_text(self) -> str:
        """`≤ 0.2.0 no patch · 0.2.1–0.2.5 mamba patches · 0.2.7+ mamba only logs`"""
        return " · ".join(f"{r.span} {r.word}" for r in self.behaviour)

    def line(self) -> str:
        """`vllm-mlx on mlx-lm-0.30.5: ≤ 0.2.0 no patch · 0.2.1–0.2.5 mamba patches · …`"""
        return f"{self.family} on {self.cell}: {self.behaviour_text()}"


def _patch_word(patches: list[ReportPatch]) -> str:
    """What a release's entry points do here; roles with no target here are left out."""
    if not patches:
        return "no patch"
    here = [p for p in patches if p.observed != "not-applicable"]
    if not here:
        return "n/a (no target here)"
    parts = []
    for p in sorted(here, key=lambda p: p.role):
        does = DOES.get(p.observed, p.observed)
        if not p.imported:
            does = "does not import"
        elif p.observed == "skipped" and p.log:
            does = "only logs"
        parts.append(f"{p.role} {does}")
    return ", ".join(parts)


def _standing(rows: list[ReportRow]) -> str:
    bad = [r for r in rows if r.verdict in BAD]
    if not rows:
        return "no rows"
    if not bad:
        return "all pass"
    own = sum(1 for r in bad if r.fault in ("subject", "subject-worsened"))
    return f"{len(bad)} not pass ({own} its own)" if own else f"{len(bad)} not pass (upstream)"


def _runs(words: list[tuple[str, str]], family: tuple[str, ...] = ()) -> list[Run]:
    """Neighbouring releases with the same word; `≤ X` / `X+` only where the run reaches the
    family's first / last release and no release between is unmeasured (else `A–B`, or the
    releases one by one where the cell skipped some)."""
    runs: list[Run] = []
    for release, word in words:
        if runs and runs[-1].word == word:
            runs[-1].releases.append(release)
        else:
            runs.append(Run(word, [release], ""))
    order = {v: i for i, v in enumerate(family)}
    for run in runs:
        first, last = run.releases[0], run.releases[-1]
        whole = not family or order.get(last, 0) - order.get(first, 0) + 1 == len(run.releases)
        if not whole:
            run.span = ", ".join(run.releases)
        elif len(runs) > 1 and family and first == family[0]:
            run.span = f"≤ {last}"
        elif len(runs) > 1 and family and last == family[-1]:
            run.span = f"{first}+"
        else:
            run.span = f"{first}–{last}" if first != last else first
    return runs


def _changes(releases: list[str], verdicts: dict[About, dict[str, str]],
             patch_words: dict[str, dict[str, str]]) -> list[Change]:
    found: dict[tuple[str, str, str, str], Change] = {}
    for name, by_release in [*((f"patch {role}", v) for role, v in patch_words.items()),
                             *((a.text, v) for a, v in sorted(verdicts.items()))]:
        seen = [(r, by_release[r]) for r in releases if r in by_release]
        for (prev, before), (release, after) in pairwise(seen):
            if before != after:
                key = (release, prev, before, after)
                found.setdefault(key, Change(release, prev, before, after)).abouts.append(name)
    return sorted(found.values(), key=lambda c: (Version(c.release), -len(c.abouts)))


def subject_axes(report: CompatDoc, families: dict[str, Family],
                 label: str = "") -> list[SubjectAxis]:
    """One axis per family and cell that measured two or more of its releases."""
    axes = []
    for family in families.values():
        members = family.members()  # subject -> release
        for cell in (c for c in report.cells if c.label == label):
            rows = [r for r in report.results if r.cell == cell.cell and r.subject in members]
            present = sorted({members[r.subject] for r in rows}, key=Version)
            if len(present) < 2:
                continue
            name = {v: s for s, v in members.items()}
            patches = defaultdict(list)
            for p in report.patches:
                if p.cell == cell.cell and p.subject in members:
                    patches[members[p.subject]].append(p)
            verdicts: dict[About, dict[str, str]] = defaultdict(dict)
            for r in rows:
                verdicts[r.about][members[r.subject]] = r.verdict
            roles: dict[str, dict[str, str]] = defaultdict(dict)
            for release, found in patches.items():
                for p in found:
                    roles[p.role][release] = _patch_word([p]).partition(" ")[2]
            axes.append(SubjectAxis(
                family.name, cell.cell,
                _runs([(v, _patch_word(patches[v])) for v in present], family.versions),
                _runs([(v, _standing([r for r in rows if r.subject == name[v]]))
                       for v in present], family.versions),
                _changes(present, verdicts, roles),
                {members[s]: members.get(c.same_as, c.same_as)
                 for s, c in cell.subjects.items() if s in members and c.same_as}))
    return axes
