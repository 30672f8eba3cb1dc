"""Resolved cells: `latest` (the newest mlx-lm, mlx and mlx-vlm on PyPI) and a subject "as
installed" (what `pip install <subject>` resolves to on Apple silicon, where it runs).

The versions a resolved cell gets are recorded in its install record and cell JSON.
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
# Users of these servers run them on Apple silicon: resolve for that platform, macOS 14 (the
# oldest hosted arm64 runner; mlx publishes no wheels for older macOS).
PLATFORM = "aarch64-apple-darwin"
MACOS = "14.0"
_PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;]+)")


def compile_pins(requirements: list[str], python: str = "3.11") -> dict[str, str]:
    """Every `name==version` uv resolves `requirements` to on Apple silicon."""
    uv = shutil.which("uv") or f"{sys.executable} -m uv"
    cmd = [*uv.split(), "pip", "compile", "-", "--python-platform", PLATFORM,
           "--python-version", python, "--no-header", "--no-annotate", "--quiet"]
    env = {**os.environ, "MACOSX_DEPLOYMENT_TARGET": os.environ.get("MACOSX_DEPLOYMENT_TARGET",
                                                                    MACOS)}
    proc = subprocess.run(cmd, input="\n".join(requirements), capture_output=True, text=True,
                          timeout=600, check=False, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"uv pip compile {' '.join(requirements)} failed: "
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
