"""Whether a subject's entry points left mlx, mlx-lm and mlx-vlm as they found them.

A patch row observes its role's own target modules. A subject whose rows all say "changed
nothing" may still have rebound a function of another module, filled a module's registry
in place, hooked a later import or started a thread that patches later. Its behaviour rows
can be `none`'s (`borrow.borrow_rows`: the same code runs, so the same rows come out) only
when none of that happened either, which this module observes wide: before the entry points
run it imports the modules the behaviour checks drive (every role's targets, mlx_lm.server,
the model modules of the cell's families) and records every attribute of every loaded module
of those packages, each class's own entries, and the size and keys of each module-level
container; after them it compares, and also looks at import hooks, threads and the trace
and profile hooks. What it cannot see (an object's inner state changed in place, below a
module's top level) is named in DESIGN.md.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

PACKAGES = ("mlx", "mlx_lm", "mlx_vlm")
DRIVEN = ("mlx_lm.generate", "mlx_lm.models.cache", "mlx_lm.models.base", "mlx_lm.server",
          "mlx_lm.sample_utils", "mlx_lm.tokenizer_utils", "mlx_lm.utils", "mlx.core", "mlx.nn")
_RUNTIME = ("__dict__", "__weakref__", "__doc__", "__slotnames__", "_abc_impl")
_GONE = object()


@dataclass
class Footprint:
    attributes: dict[str, Any]  # "module:attr[.member]" -> the object (or a container's mark)
    modules: frozenset[str]  # loaded modules of PACKAGES
    hooks: tuple[int, ...]  # ids of sys.meta_path and sys.path_hooks entries
    threads: frozenset[int]
    tracing: tuple[Any, Any]


def _package(name: str) -> bool:
    return name.partition(".")[0] in PACKAGES


def prepare(modules: Iterable[str]) -> None:
    """Import what the behaviour checks will drive (a module a release lacks is skipped)."""
    for name in (*DRIVEN, *modules):
        try:
            if importlib.util.find_spec(name) is not None:
                importlib.import_module(name)
        except Exception:  # a release without it: nothing to observe there
            continue


def family_modules(models: Iterable[str]) -> list[str]:
    """The model modules of the cell's families, in mlx-lm and mlx-vlm."""
    return [f"{package}.models.{name}" for name in models for package in ("mlx_lm", "mlx_vlm")]


@dataclass(frozen=True)
class _Container:
    ident: int
    size: int
    keys: tuple[str, ...] = ()


def _mark(value: Any) -> Any:
    """A module-level container is compared by identity, size and keys (a registry filled in
    place keeps its identity); anything else by identity."""
    if isinstance(value, dict):
        return _Container(id(value), len(value), tuple(map(repr, list(value)[:512])))
    if isinstance(value, list | set):
        return _Container(id(value), len(value))
    return value


def take() -> Footprint:
    found: dict[str, Any] = {}
    loaded = sorted(n for n, m in list(sys.modules.items()) if m is not None and _package(n))
    for name in loaded:
        module = sys.modules[name]
        for attr, value in list(vars(module).items()):
            found[f"{name}:{attr}"] = _mark(value)
            if inspect.isclass(value) and getattr(value, "__module__", None) == name:
                for key, member in list(vars(value).items()):
                    if key not in _RUNTIME:
                        found[f"{name}:{attr}.{key}"] = member
    return Footprint(found, frozenset(loaded),
                     tuple(map(id, [*sys.meta_path, *sys.path_hooks])),
                     frozenset(t.ident or 0 for t in threading.enumerate()),
                     (sys.gettrace(), sys.getprofile()))


def _same(a: Any, b: Any) -> bool:
    return a == b if isinstance(a, _Container) else a is b


def changes(before: Footprint, after: Footprint) -> list[str]:
    """What the entry points changed that a `none` process would not have (empty: nothing)."""
    found = [f"{k} rebound or altered" for k, v in before.attributes.items()
             if k.partition(":")[0] in after.modules
             and not _same(v, after.attributes.get(k, _GONE))]
    fresh = after.modules - before.modules
    found += [f"{k} added" for k in after.attributes  # a package's new submodule is an import
              if k.partition(":")[0] in before.modules and k not in before.attributes
              and k.replace(":", ".", 1) not in fresh]
    found += [f"imported {m}" for m in sorted(fresh)]
    if before.hooks != after.hooks:
        found.append("import hooks (sys.meta_path / sys.path_hooks) changed")
    if after.threads - before.threads:
        found.append(f"started {len(after.threads - before.threads)} thread(s)")
    if before.tracing != after.tracing:
        found.append("set a trace or profile hook")
    return found


def outside(found: list[str], targets: tuple[str, ...]) -> list[str]:
    """The changes of `changes` beyond these target modules (imports are recorded elsewhere:
    importing mlx_lm's modules is a patch's job)."""
    return [line for line in found if not line.startswith("imported ")
            and (":" not in line or line.partition(":")[0] not in targets)]
