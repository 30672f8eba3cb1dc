"""Installed files of mlx, mlx-lm and mlx-vlm that no longer match their RECORD.

A patch is process state; a subject that rewrites a file of an installed package changes
every later process in that environment, `none`'s included (vMLX 1.6.81 copies its own
mlx_lm/models/deepseek_v3.py over mlx-lm's on import, keeping a `.vmlx-backup-*` beside it).
The RECORD (PEP 627) holds each file's sha256 as installed.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import fcntl
import hashlib
import os
import sys
import tempfile
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

WATCHED = ("mlx", "mlx-lm", "mlx-vlm")
ADDED = " (added)"  # how `changed_in` names a file no RECORD lists


def _digest(path: Path, recorded: str) -> str:
    """The file's digest in the RECORD's own form (mlx 0.29's RECORD omits `sha256=`)."""
    algorithm, _, _ = recorded.rpartition("=")
    raw = hashlib.new(algorithm or "sha256", path.read_bytes()).digest()
    value = base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
    return f"{algorithm}={value}" if algorithm else value


def _record(dist_info: Path) -> list[tuple[str, str]]:
    path = dist_info / "RECORD"
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as fh:
        return [(row[0], row[1]) for row in csv.reader(fh) if len(row) >= 2 and row[1]]


def changed_in(site: Path, dist_info: Path) -> list[str]:
    """Files of one distribution whose bytes differ from its RECORD (or are gone), and files
    added beside them in its own package folders."""
    found: list[str] = []
    listed = _record(dist_info)
    folders: set[Path] = set()
    for name, digest in listed:
        path = site / name
        if path.suffix == ".py":
            folders.add(path.parent)
        if not path.exists():
            found.append(f"{name} (removed)")
        elif _digest(path, digest) != digest:
            found.append(name)
    known = {(site / name).resolve() for name, _ in listed}
    for folder in sorted(folders):
        for extra in sorted(folder.iterdir()) if folder.is_dir() else []:
            if extra.is_file() and extra.resolve() not in known and extra.suffix != ".pyc":
                found.append(f"{extra.relative_to(site)}{ADDED}")
    return found


def changed_files(site: Path | None = None, names: tuple[str, ...] = WATCHED) -> list[str]:
    """Every watched distribution's changed files: in `site` (a site-packages folder), or
    where this interpreter has them installed."""
    found: list[str] = []
    for name in names:
        stem = name.replace("-", "_").lower()
        if site is not None:
            infos = [p for p in site.glob("*.dist-info") if p.name.lower().split("-")[0] == stem]
            found += [c for info in infos for c in changed_in(site, info)]
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        root = Path(str(dist.locate_file("")))
        infos = [p for p in root.glob("*.dist-info") if p.name.lower().split("-")[0] == stem]
        found += [c for info in infos for c in changed_in(root, info)]
    return found


Stat = dict[str, tuple[int, int]]


def package_folders(names: tuple[str, ...] = WATCHED) -> list[Path]:
    """The top-level package folders these distributions installed here."""
    folders: set[Path] = set()
    for name in names:
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            top = Path(str(file)).parts[0]
            if not top.endswith((".dist-info", ".data")) and "." not in top:
                folders.add(Path(str(dist.locate_file(top))))
    return sorted(f for f in folders if f.is_dir())


def stat_files(folders: list[Path]) -> Stat:
    """(mtime_ns, size) of every file under `folders`: cheap enough to take around each call.
    Bytecode caches are left out, with the temporary files Python writes them through
    (`__pycache__/x.cpython-311.pyc.<id>`): another subject's first import of a module writes
    them in the shared venv at any moment, and they are the interpreter's, never a patch's."""
    found: Stat = {}
    for folder in folders:
        below = [str(folder)]
        while below:  # os.scandir: one stat per file (rglob, is_file, stat took three)
            with os.scandir(below.pop()) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != "__pycache__":
                            below.append(entry.path)
                    elif entry.is_file() and not entry.name.endswith(".pyc"):
                        st = entry.stat()
                        found[os.path.relpath(entry.path, folder.parent)] = (st.st_mtime_ns,
                                                                             st.st_size)
    return found


def stat_changes(before: Stat, after: Stat) -> list[str]:
    return [k for k in sorted({*before, *after}) if before.get(k) != after.get(k)]


@contextlib.contextmanager
def watch_alone() -> Iterator[None]:
    """One watch window at a time per environment (this interpreter's `sys.prefix`).

    The subjects of a cell run side by side in one venv: a file one subject's import writes
    (vMLX's deepseek_v3.py) must not land in the window of another subject's entry point and
    be charged to it. Windows of one environment take turns through a lock file; those of
    other environments never wait. The file lives in the virtual environment (it goes with
    it), in the system's temporary folder only for an interpreter's own prefix (/usr, a conda
    base) or a read-only one: one per environment there left 142 empty files after four
    hours of runs here (2026-12-07)."""
    path = Path(sys.prefix) / ".mlxcompat-watch.lock"
    if sys.prefix == sys.base_prefix or not os.access(sys.prefix, os.W_OK):
        key = hashlib.sha256(sys.prefix.encode()).hexdigest()[:16]
        path = Path(tempfile.gettempdir()) / f"mlxcompat-watch-{key}.lock"
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def unshare(site: Path, names: tuple[str, ...] = WATCHED) -> int:
    """Give `site` its own copy of every watched file that is a hard link (uv links installs
    to its cache): a subject that writes into one must not change the cache and every other
    environment linked to it. Returns how many files were copied."""
    import shutil

    copied = 0
    for name in names:
        stem = name.replace("-", "_").lower()
        for info in site.glob("*.dist-info"):
            if info.name.lower().split("-")[0] != stem:
                continue
            for rel, _ in _record(info):
                path = site / rel
                if path.is_file() and not path.is_symlink() and path.stat().st_nlink > 1:
                    tmp = path.with_name(f".{path.name}.mlxcompat-copy")
                    shutil.copy2(path, tmp)
                    os.replace(tmp, path)
                    copied += 1
    return copied
