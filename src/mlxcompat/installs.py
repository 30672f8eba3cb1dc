"""How a cell's venv gets mlxcompat itself, and when a reused venv needs no install at all."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any


def harness_requirement() -> list[str]:
    """How a cell's venv installs mlxcompat: the same code this noxfile is running.

    A source checkout (this repository, or a clone) installs editable; an installed
    distribution is installed the way it was (PEP 610: a wheel file, a VCS URL, a version).
    """
    override = os.environ.get("MLXCOMPAT_HARNESS", "").strip()
    if override:  # one requirement (`mlxcompat @ git+…` has spaces), or pip options (`-e path`)
        return override.split(maxsplit=1) if override.startswith("-") else [override]
    tree = Path(__file__).resolve().parents[2]
    if (tree / "pyproject.toml").exists() and Path(__file__).resolve().parent.parent.name == "src":
        return ["-e", str(tree)]
    from importlib import metadata

    dist = metadata.distribution("mlxcompat")
    direct = dist.read_text("direct_url.json")
    if not direct:
        return [f"mlxcompat=={dist.version}"]
    info = json.loads(direct)
    url = info.get("url", "")
    if info.get("dir_info", {}).get("editable"):
        return ["-e", url.removeprefix("file://")]
    if "vcs_info" in info:
        vcs = info["vcs_info"]
        return [f"mlxcompat @ {vcs['vcs']}+{url}@{vcs.get('commit_id', '')}"]
    return [url.removeprefix("file://")]


def harness_identity() -> str:
    """`mlxcompat 0.1.0 (git 1a2b3c4)` for a checkout (`+ local changes` when src/ differs
    from that commit), else the installed distribution's version: recorded in every cell.
    MLXCOMPAT_HARNESS_STAMP, where set, is taken as is: a copy of the tree without its own
    git (a lent GPU machine, scripts/gpu) carries the stamp made where the checkout is."""
    import os
    import subprocess

    from mlxcompat import __version__

    if os.environ.get("MLXCOMPAT_HARNESS_STAMP"):
        return os.environ["MLXCOMPAT_HARNESS_STAMP"]
    tree = Path(__file__).resolve().parents[2]
    name = f"mlxcompat {__version__}"
    if not (tree / ".git").exists():
        return name
    try:
        sha = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short=12", "HEAD"],
                             capture_output=True, text=True, timeout=10, check=True).stdout
        dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "src"],
                               capture_output=True, text=True, timeout=10, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return name
    return f"{name} (git {sha.strip()}{' + local changes' if dirty.strip() else ''})"


def resolution_target(cell: Any) -> str:
    """What an as-installed cell was resolved for ('' for a pinned cell and for `latest`, the
    newest on the index for every platform)."""
    from mlxcompat.resolve import resolved_for

    return resolved_for() if cell.resolve and cell.resolve != "latest" else ""


def install_key(plan: list[tuple[str, list[str]]], python: str) -> str:
    """What a venv's install depends on: the commands, and the metadata of editable trees."""
    from mlxcompat.inputs import digest

    meta = {}
    for _, args in plan:
        for i, arg in enumerate(args[:-1]):
            if arg == "-e":
                pyproject = Path(args[i + 1]) / "pyproject.toml"
                meta[args[i + 1]] = pyproject.read_text() if pyproject.exists() else ""
    return digest({"plan": plan, "editable": meta, "python": python})


def _sites(venv: Path) -> list[Path]:
    return sorted(venv.glob("lib/python*/site-packages"))


def tampered(venv: Path) -> list[str]:
    """Files of mlx / mlx-lm / mlx-vlm in `venv` that differ from their RECORD."""
    from mlxcompat.drivers.installed import changed_files

    return [c for site in _sites(venv) for c in changed_files(site)]


def remove_added_files(venv: Path, changed: list[str]) -> list[str]:
    """Delete the files of `changed` (from `tampered`) that no RECORD lists (vMLX's
    `deepseek_v3.py.vmlx-backup-*`): a reinstall leaves them, so they would pile up, one per
    run, and the venv would never match its RECORDs again. Returns those deleted."""
    from mlxcompat.drivers.installed import ADDED

    added = [c.removesuffix(ADDED) for c in changed if c.endswith(ADDED)]
    for rel in added:
        for site in _sites(venv):
            (site / rel).unlink(missing_ok=True)
    return added


def unshare_watched(venv: Path) -> int:
    """mlx / mlx-lm / mlx-vlm files of `venv` copied out of uv's hard-linked cache."""
    from mlxcompat.drivers.installed import unshare

    return sum(unshare(site) for site in _sites(venv))
