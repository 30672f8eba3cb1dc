"""Cells built from source: mlx-lm, mlx-vlm or mlx at a git commit, or from a local tree.

    - {mlx-lm: {git: "https://github.com/ml-explore/mlx-lm", commit: "<sha>"}, mlx: "0.32.2"}
    - {mlx-lm: {git: "https://github.com/ml-explore/mlx-lm", ref: main}, mlx: "0.32.4"}
    - {mlx-lm: {path: "../mlx-lm"}, mlx: "0.32.2", id: my-mlx-lm}

Such a cell is no PyPI release: its default id names the commit (`git-mlx-lm-<12 hex>`), the
ref or the folder, never a version, and its JSON records the commit it installed (a ref is
resolved when the cell runs; a folder is recorded by its tree hash, and its git HEAD when it
is a work tree). The package's own version still decides which expectations apply.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlxcompat.validation import fail, mapping

SOURCE_KEYS = {"git", "commit", "ref", "path"}
_HEX = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class Source:
    package: str
    git: str = ""
    commit: str = ""
    ref: str = ""
    path: str = ""

    def requirement(self, base: Path) -> str:
        """What pip installs: a PEP 508 direct reference, or the folder (never editable)."""
        if self.git:
            return f"{self.package} @ git+{self.git}@{self.commit or self.ref}"
        return str(self.folder(base))

    def folder(self, base: Path) -> Path:
        return (base / self.path).expanduser().resolve()

    @property
    def cell_id(self) -> str:
        if self.commit:
            return f"git-{self.package}-{self.commit[:12]}"
        if self.ref:
            return f"git-{self.package}-{re.sub(r'[^A-Za-z0-9._-]', '-', self.ref)}"
        return f"src-{self.package}-{Path(self.path).name or 'tree'}"


def parse_source(package: str, raw: Any, path: str) -> Source:
    raw = mapping(raw, path, SOURCE_KEYS)
    if "path" in raw:
        if set(raw) != {"path"} or not isinstance(raw["path"], str) or not raw["path"]:
            raise fail(path, "a local tree is {path: <folder>} and nothing else")
        return Source(package, path=raw["path"])
    url = raw.get("git")
    if not isinstance(url, str) or not url:
        raise fail(f"{path}.git", "give the repository URL (or use {path: <folder>})")
    commit, ref = str(raw.get("commit", "")), str(raw.get("ref", ""))
    if bool(commit) == bool(ref):
        raise fail(path, "give exactly one of commit (a sha) or ref (a branch or tag)")
    if commit and not _HEX.match(commit):
        raise fail(f"{path}.commit", f"{commit!r} is not a commit sha (7 to 40 hex digits)")
    return Source(package, git=url, commit=commit, ref=ref)
