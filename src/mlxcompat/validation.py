"""Small validators for matrix.yaml: every error is one line naming the key path and what is
allowed, raised as MatrixError."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version


class MatrixError(ValueError):
    """A malformed matrix.yaml; the message names the key path and what is allowed."""


def fail(path: str, message: str) -> MatrixError:
    return MatrixError(f"matrix.yaml: {path}: {message}")


def mapping(value: Any, path: str, allowed: Iterable[str] | None = None) -> dict[str, Any]:
    """`value` as a mapping whose keys are all in `allowed` (any key when None)."""
    if not isinstance(value, dict):
        raise fail(path, f"expected a mapping, got {type(value).__name__}")
    if allowed is not None:
        allowed = set(allowed)
        for key in value:
            if key not in allowed:
                raise fail(f"{path}.{key}", f"unknown key; allowed: {', '.join(sorted(allowed))}")
    return value


def names(value: Any, path: str, known: Iterable[str], what: str) -> tuple[str, ...]:
    """A list of names, each one of `known`."""
    known = tuple(known)
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise fail(path, f"expected a list of {what} names")
    for i, name in enumerate(value):
        if name not in known:
            shown = ", ".join(repr(k) if k == "" else k for k in known)
            raise fail(f"{path}[{i}]", f"unknown {what} {name!r}; known: {shown}")
    return tuple(value)


def version(value: Any, path: str) -> str:
    try:
        return str(Version(str(value)))
    except InvalidVersion:
        raise fail(path, f"{value!r} is not a valid version (e.g. 0.29.2)") from None


def specifier(value: Any, path: str) -> SpecifierSet:
    try:
        return SpecifierSet(str(value))
    except InvalidSpecifier:
        raise fail(path, f"{value!r} is not a version specifier (e.g. '>=0.30.4')") from None
