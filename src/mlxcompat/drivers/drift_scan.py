"""API drift read from source, without importing or running anything.

Reads mlx-lm / mlx-vlm files (from a wheel or an installed tree) with `ast`, so a release can
be described in well under a second once its wheel is local.
"""

from __future__ import annotations

import ast
import hashlib
import textwrap
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

LM_FILES = ("mlx_lm/generate.py", "mlx_lm/models/cache.py", "mlx_lm/models/base.py")
VLM_FILES = ("mlx_vlm/models/glm4v_moe/language.py", "mlx_vlm/models/base.py",
             "mlx_vlm/models/cache.py")
ARRAYS_CACHE_METHODS = ("filter", "extend", "extract", "merge", "prepare", "finalize",
                        "advance", "make_mask", "empty")
# Normalised-source digests of the upstream `GLM4VModel.__call__` bodies seen so far (the
# same normalisation as drivers.glm4v.call_body_digest, which reads the imported code).
GLM4V_BODIES: dict[str, str] = {
    "3ed0ea408389": "cache-list-mask",  # mask from the cache list: seen in 0.3.3-0.4.4
    "1c343c95c2de": "cache0-mask",  # mask from cache[0]: seen in 0.5.0-0.7.10
}


def read_wheel(path: Path, wanted: tuple[str, ...]) -> dict[str, str]:
    with zipfile.ZipFile(path) as wheel:
        names = set(wheel.namelist())
        return {name: wheel.read(name).decode("utf-8") for name in wanted if name in names}


def _module_defs(tree: ast.Module) -> dict[str, ast.AST]:
    return {n.name: n for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)}


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _used_outside(tree: ast.Module, name: str) -> bool:
    """Is `name` referenced by any top-level definition other than its own?"""
    for node in tree.body:
        if getattr(node, "name", None) == name:
            continue
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name) and sub.id == name:
                return True
    return False


def _positional(fn: ast.FunctionDef, drop_self: bool = False) -> list[str]:
    names = [a.arg for a in (*fn.args.posonlyargs, *fn.args.args)]
    return names[1:] if drop_self else names


def _imports_of(tree: ast.Module, name: str) -> str | None:
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            return "." * node.level + (node.module or "")
    return None


def scan_lm_sources(src: Mapping[str, str]) -> dict[str, Any]:
    """The batching patch targets of one mlx-lm release, read from its source files."""
    gen = ast.parse(src["mlx_lm/generate.py"])
    cache = ast.parse(src["mlx_lm/models/cache.py"])
    defs, cache_defs = _module_defs(gen), _module_defs(cache)
    row: dict[str, Any] = {}
    make = defs.get("_make_cache")
    row["_make_cache"] = "absent" if not isinstance(make, ast.FunctionDef) else (
        f"{len(_positional(make))} args, " + ("called" if _used_outside(gen, "_make_cache")
                                              else "never called"))
    merge = defs.get("_merge_caches")
    row["_merge_caches"] = "absent" if merge is None else (
        "called" if _used_outside(gen, "_merge_caches") else "never called")
    row["MambaCache"] = "present" if "MambaCache" in cache_defs else "absent"
    arrays = cache_defs.get("ArraysCache")
    methods = _methods(arrays) if isinstance(arrays, ast.ClassDef) else {}
    row["ArraysCache batch methods"] = " ".join(m for m in ARRAYS_CACHE_METHODS if m in methods)
    where = "mlx_lm.models.cache" if "BatchKVCache" in cache_defs else (
        "mlx_lm.generate" if "BatchKVCache" in defs else "absent")
    exported = _imports_of(gen, "BatchKVCache")
    row["BatchKVCache"] = where + (" (re-exported by generate)" if exported else "")
    bg = defs.get("BatchGenerator")
    if isinstance(bg, ast.ClassDef):
        bg_methods = _methods(bg)
        init = bg_methods.get("__init__")
        if init is not None:
            pos = _positional(init, drop_self=True)[1:]
            kwonly = [a.arg for a in init.args.kwonlyargs]
            row["BatchGenerator(...) keywords"] = " ".join(pos + kwonly) + (
                " [keyword-only]" if kwonly and not pos else "")
        insert = bg_methods.get("insert")
        row["insert(caches=)"] = "yes" if insert and "caches" in _positional(insert) else "no"
        row["next() returns"] = "tuple (prompt, generation)" if returns_tuple(bg) else "list"
        stats = bg_methods.get("stats")
        row["stats()"] = "absent" if stats is None else (
            "context manager" if any("contextmanager" in ast.unparse(d)
                                     for d in stats.decorator_list) else "method")
    else:
        row["BatchGenerator(...) keywords"] = "absent"
    return row


def returns_tuple(bg: ast.ClassDef) -> bool:
    """Does next() / _next() return a tuple (prompt, generation responses)?"""
    for fn in _methods(bg).values():
        if fn.name not in ("next", "_next"):
            continue
        for node in ast.walk(fn):
            if isinstance(node, ast.Return) and isinstance(node.value, ast.Tuple):
                return True
    return False


def call_digest(source: str, cls: str, method: str) -> str | None:
    """Short sha256 of a method's source lines (dedented, blank lines dropped)."""
    tree = ast.parse(source)
    node = _module_defs(tree).get(cls)
    fn = _methods(node).get(method) if isinstance(node, ast.ClassDef) else None
    if fn is None:
        return None
    lines = source.splitlines()[fn.lineno - 1: fn.end_lineno]
    text = textwrap.dedent("\n".join(lines))
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return hashlib.sha256("\n".join(kept).encode()).hexdigest()[:12]


def _mask_takes_list(source: str | None) -> str:
    if source is None:
        return "unknown (source not found)"
    fn = _module_defs(ast.parse(source)).get("create_attention_mask")
    if fn is None:
        return "unknown (not defined there)"
    text = ast.unparse(fn)
    takes = "isinstance(cache, (list, tuple))" in text or "isinstance(cache, list)" in text
    return "yes" if takes else "no"


def scan_vlm_sources(src: Mapping[str, str], lm_src: Mapping[str, str]) -> dict[str, Any]:
    """GLM4V targets of one mlx-vlm release (mlx-lm sources resolve re-exported helpers)."""
    language = src.get("mlx_vlm/models/glm4v_moe/language.py")
    if language is None:
        return {"glm4v_moe": "absent"}
    digest = call_digest(language, "GLM4VModel", "__call__")
    row: dict[str, Any] = {
        "glm4v_moe": "present",
        "GLM4VModel.__call__ body": f"{GLM4V_BODIES.get(digest or '', 'unknown')} ({digest})",
    }
    origin = _imports_of(ast.parse(language), "create_attention_mask") or ""
    helper = lm_src.get("mlx_lm/models/base.py") if "mlx_lm" in origin else src.get(
        "mlx_vlm/models/base.py")
    if "mlx_lm" not in origin and helper is not None:
        again = _imports_of(ast.parse(helper), "create_attention_mask") or ""
        if "mlx_lm" in again:
            origin, helper = again, lm_src.get("mlx_lm/models/base.py")
    row["create_attention_mask from"] = origin.replace("..", "mlx_vlm.models.") or "language.py"
    row["create_attention_mask takes a cache list"] = _mask_takes_list(helper)
    cache = src.get("mlx_vlm/models/cache.py", "")
    row["BatchKVCache (mlx-vlm)"] = ("vendored" if "class BatchKVCache" in cache else
                                     "from mlx-lm" if "BatchKVCache" in cache else "absent")
    return row
