"""Releases of one subject family whose entry points' modules are byte-identical share one run.

The key of a subject is the sha256 of each entry point (role, `module:function`) and the bytes
of the module file it names, read from what was installed (the subject's `--target` folder)
or from a wheel. Members of one family with the same key run once, under the newest of them;
the others get that run's rows under their own name and say so (`SubjectCounts.same_as`);
a member without any entry point (a release that ships no patch) gets `none`'s.
Only the entry points' own module files are compared, as their packages ship them; what else
of the package an import executes is taken to be the same (the harness observes every
target the import and the call change, on the subject that runs).
"""

from __future__ import annotations

import hashlib
import zipfile
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path

from packaging.version import Version

from mlxcompat.matrix import SubjectSpec
from mlxcompat.records.cell import CellDoc, SubjectCounts
from mlxcompat.records.names import UPSTREAM
from mlxcompat.records.rows import ResultRow

Reader = Callable[[str], bytes | None]  # a module's file, by its path in the package tree


def module_paths(module: str) -> tuple[str, str]:
    stem = module.replace(".", "/")
    return f"{stem}.py", f"{stem}/__init__.py"


def subject_key(entry_points: dict[str, str], read: Reader) -> str | None:
    """The key of these entry points' modules; None when one of them is not there."""
    digest = hashlib.sha256()
    for role, entry in sorted(entry_points.items()):
        found = next((b for b in map(read, module_paths(entry.partition(":")[0]))
                      if b is not None), None)
        if found is None:
            return None
        digest.update(f"{role}\0{entry}\0".encode())
        digest.update(hashlib.sha256(found).digest())
    return digest.hexdigest()[:16]


def folder_reader(root: Path) -> Reader:
    def read(name: str) -> bytes | None:
        path = root / name
        return path.read_bytes() if path.is_file() else None
    return read


def wheel_reader(wheel: Path) -> Reader:
    with zipfile.ZipFile(wheel) as z:
        files = {n: z.read(n) for n in z.namelist() if n.endswith(".py")}
    return files.get


def plan_sharing(subjects: Iterable[SubjectSpec], reader_of: Callable[[SubjectSpec], Reader | None]
                 ) -> dict[str, str]:
    """subject -> the member of its family it shares a run with (the newest of each group).

    Only family members with a reader (installed, and installed fine) take part."""
    groups: dict[tuple[str, str], list[SubjectSpec]] = defaultdict(list)
    subjects = list(subjects)
    same_as = {}
    for spec in subjects:
        read = reader_of(spec) if spec.family else None
        if read is not None and not spec.entry_points and any(
                s.name == UPSTREAM for s in subjects):
            same_as[spec.name] = UPSTREAM  # a release with no patch runs what `none` runs
            continue
        key = subject_key(spec.entry_points, read) if read is not None else None
        if key is not None and spec.entry_points:
            groups[(spec.family, key)].append(spec)
    for members in groups.values():
        runs = max(members, key=lambda s: Version(s.version))
        same_as.update({m.name: runs.name for m in members if m is not runs})
    return same_as


def share_rows(doc: CellDoc, same_as: dict[str, str], installs: Iterable[str] = ()) -> None:
    """Give each sharing subject the rows and patch rows of the run it shares (and its own
    `install` row where that run installs nothing: `none`'s)."""
    installs = set(installs)
    for name, runs in same_as.items():
        rows = [r.model_copy(update={"subject": name}) for r in doc.results
                if r.subject == runs]
        if name in installs and not any(r.check == "install" for r in rows):
            rows.insert(0, ResultRow(check="install", subject=name, verdict="pass",
                                     detail="installed"))
        doc.results += rows
        doc.patches += [p.model_copy(update={"subject": name}) for p in doc.patches
                        if p.subject == runs]
        counts = doc.subjects.get(runs, SubjectCounts())
        doc.subjects[name] = counts.model_copy(update={"same_as": runs, "bench_cases": 0})
