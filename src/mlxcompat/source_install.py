"""What a cell built from source runs: its identity before the install (for `--reuse`) and
the commit it installed (recorded in the cell JSON). See `mlxcompat.sources`."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from mlxcompat.inputs import tree_hash
from mlxcompat.records.cell import InstalledSource
from mlxcompat.sources import Source


def _git(*args: str, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=120,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {proc.stderr.strip()[-300:]}")
    return proc.stdout.strip()


def work_tree(folder: Path) -> tuple[str, bool]:
    """(HEAD commit, dirty) of a git work tree; ('', False) when `folder` is none."""
    try:
        top = _git("rev-parse", "--show-toplevel", cwd=folder)
    except (RuntimeError, OSError):
        return "", False
    if Path(top).resolve() != folder.resolve():
        return "", False  # a folder inside another repository: its tree hash says it all
    head = _git("rev-parse", "HEAD", cwd=folder)
    dirty = bool(_git("status", "--porcelain", cwd=folder))
    return head, dirty


def identity(source: Source, base: Path) -> str:
    """What the cell's results depend on: the commit (a ref asks the remote which one), or
    a folder's tree hash."""
    if source.commit:
        return source.commit
    if source.ref:
        line = _git("ls-remote", source.git, source.ref).splitlines()
        if not line:
            raise RuntimeError(f"{source.git} has no ref {source.ref!r}")
        return line[0].split()[0]
    return "tree:" + tree_hash(source.folder(base))


def _dist_info(venv: Path, package: str) -> Path | None:
    stem = package.replace("-", "_").lower()
    found = [p for p in venv.glob("lib/python*/site-packages/*.dist-info")
             if p.name.lower().split("-")[0] == stem]
    return found[0] if found else None


def installed(source: Source, base: Path, venv: Path) -> InstalledSource:
    """The installed package's version and the commit pip recorded (PEP 610)."""
    record = InstalledSource(requested=source.requirement(base))
    info = _dist_info(venv, source.package)
    if info is not None:
        meta = (info / "METADATA").read_text(encoding="utf-8", errors="replace")
        record.version = next((line.split(":", 1)[1].strip() for line in meta.splitlines()
                               if line.startswith("Version:")), "")
        direct = info / "direct_url.json"
        if direct.exists():
            vcs = json.loads(direct.read_text(encoding="utf-8")).get("vcs_info") or {}
            record.commit = str(vcs.get("commit_id", ""))
    if source.path:
        folder = source.folder(base)
        record.tree = tree_hash(folder)
        record.commit, record.dirty = work_tree(folder)
    return record


LEFT_AT_THE_TOP = {"build", ".nox", ".venv"}  # a tree's build output and environments


def clean_copy(source: Source, base: Path, venv: Path) -> Path:
    """A fresh copy of a local tree to install from, without its top-level build/ (and
    environments): a wheel built in the tree takes in whatever an earlier build left in
    build/lib, a module deleted since included, so the cell would run more than the tree
    holds. Its .git stays (setuptools-scm reads the version from it)."""
    folder = source.folder(base)
    dest = venv / "sources" / source.package
    shutil.rmtree(dest, ignore_errors=True)

    def ignore(where: str, names: list[str]) -> set[str]:
        top = LEFT_AT_THE_TOP if Path(where) == folder else set()
        return {n for n in names if n in top or n == "__pycache__"}

    shutil.copytree(folder, dest, symlinks=True, ignore=ignore)
    return dest
