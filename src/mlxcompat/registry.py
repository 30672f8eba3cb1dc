"""Models and patch roles as data: the built-in ones and a project's own, one mechanism.

A model is a `module:factory` that builds a tiny random model from a seed, plus the runner
that drives it (`lm`: mlx-lm's BatchGenerator; `glm4v`: an mlx-vlm language model with
BatchKVCache) and the parity modes it supports. A role is a kind of patch: the modules its
entry points may change (observed before and after every call), the checks and models it is
responsible for, and the capability the need probe checks to say whether a release
needs it. Which checks exist is `checks.catalog`'s; the matrix
checks that a role names only those. Imports no mlx.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import Any

import yaml

RUNNERS = ("lm", "glm4v", "vlm")
MODEL_KEYS = {"factory", "runner", "modes", "description"}
ROLE_KEYS = {"targets", "checks", "models", "need", "forced", "description"}
PARITY_MODES: tuple[str, ...] = (
    "fresh", "staggered", "leave", "history", "history-equal", "history-mixed",
    "history-single", "history-join",
)


@dataclass(frozen=True)
class ModelDecl:
    """A tiny model the checks can build: `factory(seed) -> model` and how it is driven."""

    name: str
    factory: str
    runner: str
    modes: tuple[str, ...] = PARITY_MODES
    description: str = ""


@dataclass(frozen=True)
class RoleDecl:
    """A kind of patch: what its entry points may change and what it is responsible for."""

    name: str
    targets: tuple[str, ...]
    checks: tuple[str, ...]
    models: tuple[str, ...]
    need: str = ""
    forced: bool = False
    description: str = ""


@dataclass(frozen=True)
class Registry:
    models: dict[str, ModelDecl]
    roles: dict[str, RoleDecl]


def builtin_document() -> dict[str, Any]:
    text = resources.files("mlxcompat").joinpath("builtin.yaml").read_text(encoding="utf-8")
    return yaml.safe_load(text)


class RegistryError(ValueError):
    """A malformed model or role declaration; the message names the key path."""


def _strings(value: Any, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RegistryError(f"{path}: expected a list of strings")
    return tuple(value)


def _reference(value: Any, path: str) -> str:
    if not isinstance(value, str) or value.count(":") != 1 or not all(value.split(":")):
        raise RegistryError(f"{path}: {value!r} is not of the form module:function")
    return value


def _keys(raw: Any, path: str, allowed: set[str], required: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise RegistryError(f"{path}: expected a mapping")
    for key in raw:
        if key not in allowed:
            raise RegistryError(f"{path}.{key}: unknown key; allowed: {', '.join(sorted(allowed))}")
    for key in sorted(required - set(raw)):
        raise RegistryError(f"{path}.{key}: missing")
    return raw


def parse_model(name: str, raw: Any, path: str) -> ModelDecl:
    raw = _keys(raw, path, MODEL_KEYS, {"factory", "runner"})
    if raw["runner"] not in RUNNERS:
        raise RegistryError(f"{path}.runner: {raw['runner']!r}; allowed: {', '.join(RUNNERS)}")
    modes = _strings(raw.get("modes", list(PARITY_MODES)), f"{path}.modes")
    for i, mode in enumerate(modes):
        if mode not in PARITY_MODES:
            raise RegistryError(f"{path}.modes[{i}]: unknown parity mode {mode!r}; known: "
                                f"{', '.join(PARITY_MODES)}")
    return ModelDecl(name, _reference(raw["factory"], f"{path}.factory"), raw["runner"], modes,
                     str(raw.get("description", "")))


def parse_role(name: str, raw: Any, path: str, models: dict[str, ModelDecl]) -> RoleDecl:
    raw = _keys(raw, path, ROLE_KEYS, {"targets", "checks"})
    checks = _strings(raw["checks"], f"{path}.checks")  # names: checked by the matrix
    role_models = _strings(raw.get("models", []), f"{path}.models")
    for i, model in enumerate(role_models):
        if model not in models:
            raise RegistryError(f"{path}.models[{i}]: unknown model {model!r}; known: "
                                f"{', '.join(models)}")
    targets = _strings(raw["targets"], f"{path}.targets")
    if not targets:
        raise RegistryError(f"{path}.targets: name at least one module the role may change")
    if not isinstance(raw.get("forced", False), bool):
        raise RegistryError(f"{path}.forced: expected true or false")
    return RoleDecl(name, targets, checks, role_models, str(raw.get("need", "")),
                    bool(raw.get("forced", False)), str(raw.get("description", "")))


def build_registry(models: Any = None, roles: Any = None) -> Registry:
    """The built-ins plus a project's own declarations (a name may be declared only once)."""
    builtin = builtin_document()
    found: dict[str, ModelDecl] = _collect(
        "model", ((builtin["models"], "builtin.yaml: models"), (models, "models")), parse_model)
    found_roles: dict[str, RoleDecl] = _collect(
        "role", ((builtin["roles"], "builtin.yaml: roles"), (roles, "roles")),
        lambda name, raw, path: parse_role(name, raw, path, found))
    return Registry(found, found_roles)


def _collect(kind: str, sources: Any, parse: Any) -> dict[str, Any]:
    """Built-in declarations first, then the project's; a name declared twice is refused."""
    found: dict[str, Any] = {}
    for raw, where in sources:
        for name, decl in _declarations(raw, where).items():
            if name in found:
                raise RegistryError(f"{where}.{name}: a {kind} {name!r} is built in; "
                                    "choose another name")
            found[name] = parse(name, decl, f"{where}.{name}")
    return found


def _declarations(raw: Any, where: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RegistryError(f"{where}: expected a mapping of name -> declaration")
    return raw
