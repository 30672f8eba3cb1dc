"""Resolved cells: `latest` (the newest mlx-lm, mlx and mlx-vlm on PyPI) and a subject "as
installed" (what `pip install <subject>` resolves to on Apple silicon, where it runs).

The versions a resolved cell gets are recorded in its install record and cell JSON, with the
target they were resolved for (`resolved_for`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from typing import Any

from mlxcompat.matrix import LATEST, Cell, Matrix
from mlxcompat.pypi import newest

PACKAGES = ("mlx-lm", "mlx", "mlx-vlm")
# Users of these servers run them on Apple silicon: resolve for that platform. uv targets
# macOS 13 unless told otherwise, where mlx >= 0.32.3 has no wheel; the target is the oldest
# macOS of mlxcompat's default runner labels (hosted_runners.yaml).
PLATFORM = "aarch64-apple-darwin"
_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)")


def target() -> str:
    """The macOS an as-installed cell is resolved for: MACOSX_DEPLOYMENT_TARGET when set, else
    the oldest macOS among the default runner labels."""
    from mlxcompat.hosted import defaults, deployment_target

    oldest = min((deployment_target(label) for label in defaults()),
                 key=lambda v: tuple(int(p) for p in v.split(".")))
    return os.environ.get("MACOSX_DEPLOYMENT_TARGET", oldest)


def resolved_for(macos: str | None = None) -> str:
    return f"{PLATFORM}, macOS {macos or target()}"


def compile_pins(requirements: list[str], python: str = "3.11", macos: str | None = None,
                 no_deps: bool = False) -> dict[str, str]:
    """Every `name==version` uv resolves `requirements` to on Apple silicon, macOS `macos`."""
    uv = shutil.which("uv") or f"{sys.executable} -m uv"
    cmd = [*uv.split(), "pip", "compile", "-", "--python-platform", PLATFORM,
           "--python-version", python, "--no-header", "--no-annotate", "--quiet",
           *(["--no-deps"] if no_deps else [])]
    env = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": macos or target()}
    proc = subprocess.run(cmd, input="\n".join(requirements), capture_output=True, text=True,
                          timeout=600, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"uv pip compile {' '.join(requirements)} for "
                           f"{resolved_for(env['MACOSX_DEPLOYMENT_TARGET'])} failed: "
                           f"{proc.stderr.strip()[-400:]}")
    pins = {}
    for line in proc.stdout.splitlines():
        match = _PIN.match(line.strip())
        if match:
            pins[match.group(1).lower().replace("_", "-")] = match.group(2)
    return pins


def resolve_cell(cell: Cell, matrix: Matrix) -> dict[str, str]:
    """The mlx-lm / mlx (/ mlx-vlm) versions a resolved cell is pinned to for this run."""
    if cell.resolve == LATEST:
        return {name: newest(name) for name in PACKAGES}
    spec = matrix.subjects[cell.resolve]
    pins = compile_pins(list(spec.requirements), matrix.settings.python)
    found: dict[str, Any] = {k: pins[k] for k in PACKAGES if k in pins}
    if "mlx-lm" not in found or "mlx" not in found:
        raise RuntimeError(f"{cell.resolve} resolves to no mlx-lm / mlx ({sorted(pins)[:12]})")
    return found
