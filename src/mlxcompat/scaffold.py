"""`mlxcompat init`: a starter matrix.yaml, noxfile.py and CI workflow for a server's repository.

Writes into a folder and never overwrites: if any of the files exists, it writes nothing and
names them. The matrix pins the newest mlx-lm and the newest of the minor series before it
(each to the mlx floor its wheel declares), plus a `latest` cell, and tests the working tree
(`install: ["."]`) beside upstream (`none`). The workflow calls mlxcompat's reusable workflow
and installs the harness at the commit of tag v<version> of mlxcompat's repository (from the
installed distribution's metadata, or `--repo` / `--ref`): never a placeholder, never a
movable ref.
"""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from string import Template

from packaging.version import Version

FILES = {"matrix.yaml": "matrix.yaml.tmpl", "noxfile.py": "noxfile.py.tmpl",
         ".github/workflows/compat.yml": "compat.yml.tmpl"}


def _template(name: str) -> Template:
    text = resources.files("mlxcompat").joinpath("templates", name).read_text(encoding="utf-8")
    return Template(text)


def pick_releases(wheels: Path) -> dict[str, str]:
    """The newest mlx-lm and the newest of the minor series before it, with mlx floors."""
    from mlxcompat.pypi import releases, wheel_for
    from mlxcompat.releases import mlx_floor

    found = [Version(v) for v in releases("mlx-lm", "0.28.0", "99999")]
    newest = found[-1]
    older = [v for v in found if (v.major, v.minor) < (newest.major, newest.minor)]
    old = older[-1] if older else found[0]
    return {"newest": str(newest), "old": str(old),
            "newest_mlx": mlx_floor(wheel_for("mlx-lm", str(newest), wheels)),
            "old_mlx": mlx_floor(wheel_for("mlx-lm", str(old), wheels))}


def init_project(path: Path, package: str = "", entry_points: list[str] | None = None,
                 repository: str = "", ref: str = "", wheels: Path | None = None) -> int:
    from mlxcompat.origin import OriginError, commit_of, own_repository, version

    existing = [name for name in FILES if (path / name).exists()]
    if existing:
        print(f"mlxcompat init: {', '.join(existing)} exist in {path}; nothing written "
              "(move them away first)", file=sys.stderr)
        return 1
    try:
        repository = repository or own_repository()
        ref = ref or f"v{version()}"
        commit = commit_of(repository, ref)
    except OriginError as exc:
        print(f"mlxcompat init: {exc}; nothing written", file=sys.stderr)
        return 2
    path.mkdir(parents=True, exist_ok=True)
    points = dict(ep.split("=", 1) for ep in entry_points or [])
    bad = [p for p in points.values() if p.count(":") != 1]
    if bad:
        print(f"mlxcompat init: {bad[0]!r} is not module:function", file=sys.stderr)
        return 2
    name = package or path.resolve().name
    values = {"name": name, "package": package or name.replace("-", "_"),
              "entry_points": json.dumps(points) if points else "{}  # role: module:function",
              "repository": repository, "ref": ref, "commit": commit,
              **pick_releases(wheels or path / ".nox" / "wheels")}
    for target, template in FILES.items():
        out = path / target
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(_template(template).substitute(values), encoding="utf-8")
        print(f"mlxcompat init: wrote {out}")
    if not points:
        print("mlxcompat init: add your patch entry points to matrix.yaml (subjects."
              f"{name}.entry_points: role -> module:function; roles: mamba, glm4v, ...)")
    print(f"mlxcompat init: the workflow uses {repository} at {commit} ({ref})")
    return 0
