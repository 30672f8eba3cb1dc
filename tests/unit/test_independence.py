"""The judge never shares code with what it judges, both ways: the patch modules import only
the standard library, mlx, mlx_lm, mlx_vlm and each other; nothing else of mlxcompat imports
them. Absolute, relative and `importlib.import_module("…")` imports all count, at any depth
of a module (the import graph of scripts/architecture.py)."""

from __future__ import annotations

import ast
import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "mlxcompat"
PATCHES = "mlxcompat.patches"
THIRD_PARTY = ("mlx", "mlx_lm", "mlx_vlm")


def _architecture():
    spec = importlib.util.spec_from_file_location("architecture", ROOT / "scripts" /
                                                  "architecture.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ARCH = _architecture()


def _imports_of(text: str, module: str, is_package: bool = False) -> set[str]:
    return ARCH._imports(ast.parse(text), module, is_package)


def _foreign(names: set[str]) -> set[str]:
    """Imports a patch module may not make."""
    allowed = set(sys.stdlib_module_names) | set(THIRD_PARTY)
    return {n for n in names if not (n == PATCHES or n.startswith(PATCHES + ".")
                                     or n.split(".")[0] in allowed or n == "")}


def test_patch_modules_import_nothing_of_the_judge() -> None:
    for path in sorted((SRC / "patches").glob("*.py")):
        name = f"{PATCHES}.{path.stem}" if path.stem != "__init__" else PATCHES
        found = _imports_of(path.read_text(), name, path.stem == "__init__")
        assert not _foreign(found), f"{path.name} imports {sorted(_foreign(found))}"


def test_nothing_of_the_judge_imports_the_patch_modules() -> None:
    edges = ARCH.graph(SRC)
    judge = {m: targets for m, targets in edges.items() if not m.startswith(PATCHES)}
    into = {m: sorted(t for t in targets if t.startswith(PATCHES)) for m, targets in judge.items()}
    assert not {m: t for m, t in into.items() if t}, into


def test_the_guard_sees_relative_and_importlib_imports() -> None:
    relative = "from .. import records\nfrom ..checks import compare\n"
    found = _imports_of(relative, f"{PATCHES}.mamba_cache")
    assert {"mlxcompat.records", "mlxcompat.checks.compare"} <= _foreign(found)
    dynamic = 'import importlib\ndef f():\n    importlib.import_module("mlxcompat.checks.need")\n'
    assert "mlxcompat.checks.need" in _foreign(_imports_of(dynamic, f"{PATCHES}.x"))
    sibling = "from . import journal\nfrom mlxcompat.patches.status import PatchStatus\n"
    assert not _foreign(_imports_of(sibling, f"{PATCHES}.x"))
    judge_side = 'importlib.import_module("mlxcompat.patches.mamba_cache")\n'
    assert f"{PATCHES}.mamba_cache" in _imports_of(judge_side, "mlxcompat.subjects")


def test_the_code_has_no_circles_and_no_back_arrows() -> None:
    found = ARCH.summary(SRC)
    assert found["circles"] == [] and found["back_arrows"] == [], found
