"""Known outcomes, bounded by what was measured.

An expectation names exactly which results it covers (explicit names, never globs; versions by
specifier) and what was seen there: the verdict and, where the verdict records a measured
difference, its bounds (`max_delta`, `tokens_equal`) or, for an error, a regex on the error.
A result it covers is `expected` only if it stays within those bounds; a Δ that grew or an
exception of another kind is `unexpected`. Every entry either ends at a version (an upper
bound) or says `open: true` with the upstream link that tracks it.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from mlxcompat.checks.catalog import CATALOG
from mlxcompat.records.cell import Environment
from mlxcompat.records.names import KEYS, VERDICTS
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry
from mlxcompat.validation import fail, mapping, names, specifier

PINNED = ("mlx-lm", "mlx", "mlx-vlm")
# A family member's own release (mlxcompat.families): `release: ">=0.2.8"`.
VERSIONED = (*PINNED, "release")
ROW_KEYS = tuple(k for k in KEYS if k != "model")  # keys whose values a check declares
NAME_KEYS = ("check", *KEYS, "subject", "cell", "backend")
MATCH_KEYS = (*NAME_KEYS, *VERSIONED, "device")
EXPECT_KEYS = {"match", "verdict", "reason", "link", "open", "max_delta", "tokens_equal", "error"}
_UPPER = ("<", "<=", "==", "===", "~=")


@dataclass(frozen=True)
class Expectation:
    """A known outcome; see the module docstring."""

    index: int
    names: dict[str, tuple[str, ...]]
    versions: dict[str, SpecifierSet]
    verdict: str
    reason: str
    link: str = ""
    open: bool = False
    max_delta: float | None = None
    tokens_equal: bool | None = None
    error: str = ""
    device: tuple[str, ...] = field(default_factory=tuple)

    def covers(self, result: ResultRow, cell: str, packages: dict[str, str],
               env: Environment | None = None) -> bool:
        """Does this entry speak about `result` of base cell `cell` with these packages?"""
        env = env or Environment()
        return self.matches(_values(result, cell, env), packages, env)

    def matches(self, values: dict[str, str], packages: dict[str, str],
                env: Environment) -> bool:
        """`covers`, with the row's values computed once for every entry (`_values`)."""
        for key, allowed in self.names.items():
            if values[key] not in allowed:
                return False
        for key, spec in self.versions.items():
            try:
                if key not in packages or Version(packages[key]) not in spec:
                    return False
            except InvalidVersion:
                return False
        device = env.device_name
        return not self.device or any(fnmatch.fnmatchcase(device, p) for p in self.device)

    def holds(self, result: ResultRow) -> tuple[bool, str]:
        """(True, "") when `result` is what this entry recorded, else (False, why not)."""
        if result.verdict != self.verdict:
            return False, f"{result.verdict} where {self.verdict} is expected"
        if self.max_delta is not None:
            delta = result.delta
            if delta is None or delta != delta:
                return False, f"no finite |Δ| recorded (bound {self.max_delta:g})"
            if delta > self.max_delta:
                return False, f"|Δ| {delta:.3g} beyond the recorded bound {self.max_delta:g}"
        if self.tokens_equal is not None and result.tokens_equal is not self.tokens_equal:
            return False, f"tokens_equal is {result.tokens_equal}, recorded {self.tokens_equal}"
        if self.error and not re.search(self.error, result.detail):
            return False, f"error does not match /{self.error}/"
        return True, ""

    def label(self) -> str:
        keys = " ".join(f"{k}={'|'.join(v)}" for k, v in self.names.items())
        versions = " ".join(f"{k}{v}" for k, v in self.versions.items())
        return f"#{self.index} {keys} {versions}".strip()


def _known_values(registry: Registry, checks: tuple[str, ...], key: str,
                  path: str) -> list[str] | None:
    """Every value of `key` the named checks can record; None if one takes any value."""
    values: list[str] = []
    offered = False
    for check in checks:
        declared = CATALOG[check].values(registry)
        if key not in declared:
            continue
        offered = True
        allowed = declared[key]
        if allowed is None:
            return None
        values += [v for v in allowed if v not in values]
    if not offered:
        raise fail(path, f"no check of {', '.join(checks)} has a {key!r} (checks with one: "
                   f"{', '.join(c for c, s in CATALOG.items() if key in s.values(registry))})")
    return values


def _has_upper_bound(versions: dict[str, SpecifierSet]) -> bool:
    return any(s.operator in _UPPER for spec in versions.values() for s in spec)


def _match_names(match: dict[str, Any], path: str, registry: Registry,
                 known: dict[str, tuple[str, ...]]) -> dict[str, tuple[str, ...]]:
    """The names an entry matches: checks, models, subjects, cells, backends, and the row
    keys (mode, role, …) with the values the named checks declare."""
    found: dict[str, tuple[str, ...]] = {}
    for key in ("check", "model", "subject", "cell", "backend"):
        if key in match:
            found[key] = names(match[key], f"{path}.match.{key}", known[key], key)
    for key in ROW_KEYS:
        if key in match:
            where = f"{path}.match.{key}"
            allowed = _known_values(registry, found.get("check", tuple(CATALOG)), key, where)
            given = match[key] if isinstance(match[key], list) else [match[key]]
            found[key] = names(given, where, allowed if allowed is not None
                               else [str(g) for g in given], key)
    return found


def _why_and_where(raw: dict[str, Any], path: str,
                   versions: dict[str, SpecifierSet]) -> tuple[str, str, bool]:
    """(reason, link, open): every entry has a reason, and ends at a release or is open with
    the https link that tracks it."""
    reason = " ".join(str(raw.get("reason", "")).split())
    if not reason:
        raise fail(f"{path}.reason", "every expectation needs a reason")
    link, is_open = str(raw.get("link", "")), raw.get("open", False)
    if not isinstance(is_open, bool):
        raise fail(f"{path}.open", "expected true or false")
    if is_open and not link.startswith("https://"):
        raise fail(f"{path}.link", "an open expectation needs the https link that tracks it")
    if not is_open and not _has_upper_bound(versions):
        raise fail(f"{path}.match", "give a version upper bound (e.g. mlx-lm: '<0.31.2') or "
                   "say open: true with the upstream link")
    return reason, link, is_open


def _bounds(raw: dict[str, Any], path: str, verdict: str) -> tuple[float | None, bool | None,
                                                                    str]:
    """(max_delta, tokens_equal, error regex), each only with the verdict it bounds."""
    max_delta = raw.get("max_delta")
    if max_delta is not None and (not isinstance(max_delta, int | float) or max_delta <= 0):
        raise fail(f"{path}.max_delta", f"{max_delta!r}; expected a positive number")
    if max_delta is not None and verdict != "fail":
        raise fail(f"{path}.max_delta", "bounds a measured difference: only with verdict fail")
    tokens_equal = raw.get("tokens_equal")
    if tokens_equal is not None and not isinstance(tokens_equal, bool):
        raise fail(f"{path}.tokens_equal", "expected true or false")
    error = str(raw.get("error", ""))
    if error:
        if verdict != "error":
            raise fail(f"{path}.error", "a regex on the error: only with verdict error")
        try:
            re.compile(error)
        except re.error as exc:
            raise fail(f"{path}.error", f"not a regex: {exc}") from None
    return None if max_delta is None else float(max_delta), tokens_equal, error


def parse_expectation(raw: Any, i: int, registry: Registry, subjects: tuple[str, ...],
                      cells: tuple[str, ...], backends: tuple[str, ...],
                      families: dict[str, tuple[str, ...]] | None = None) -> Expectation:
    """One entry; a family's name in `match.subject` stands for every member of it."""
    path = f"expectations[{i}]"
    raw = mapping(raw, path, EXPECT_KEYS)
    match = dict(mapping(raw.get("match") or {}, f"{path}.match", MATCH_KEYS))
    if families and "subject" in match:
        given = match["subject"] if isinstance(match["subject"], list) else [match["subject"]]
        match["subject"] = list(dict.fromkeys(
            m for name in given for m in families.get(name, (name,))))
    known = {"check": tuple(CATALOG), "model": tuple(registry.models), "subject": subjects,
             "cell": cells, "backend": backends}
    found = _match_names(match, path, registry, known)
    versions = {k: specifier(match[k], f"{path}.match.{k}") for k in VERSIONED if k in match}
    device = match.get("device", [])
    device = tuple(device if isinstance(device, list) else [device])
    verdict = raw.get("verdict")
    if verdict not in VERDICTS:
        raise fail(f"{path}.verdict", f"{verdict!r}; allowed: {', '.join(VERDICTS)}")
    reason, link, is_open = _why_and_where(raw, path, versions)
    max_delta, tokens_equal, error = _bounds(raw, path, str(verdict))
    return Expectation(i, found, versions, str(verdict), reason, link, is_open, max_delta,
                       tokens_equal, error, device)


def _values(result: ResultRow, cell: str, env: Environment) -> dict[str, str]:
    return {"check": result.check, "subject": result.subject, "cell": cell,
            "backend": env.backend, **{k: str(getattr(result, k)) for k in KEYS}}


_BY_CHECK: dict[int, tuple[tuple[Expectation, ...], dict[str, tuple[Expectation, ...]]]] = {}


def _for_check(expectations: tuple[Expectation, ...], check: str) -> tuple[Expectation, ...]:
    """The entries that can speak about rows of `check`, in file order (a report asks for
    each of its ~20,000 rows: scanning every entry for each was a third of its time)."""
    held = _BY_CHECK.get(id(expectations))
    if held is None or held[0] is not expectations:
        held = (expectations, {})
        _BY_CHECK[id(expectations)] = held
    found = held[1].get(check)
    if found is None:
        found = held[1][check] = tuple(e for e in expectations
                                       if check in e.names.get("check", (check,)))
    return found


def first_covering(expectations: tuple[Expectation, ...], result: ResultRow, cell: str,
                   packages: dict[str, str], env: Environment | None = None
                   ) -> Expectation | None:
    """The first entry that speaks about `result` (specific entries come first in the file)."""
    env = env or Environment()
    values = _values(result, cell, env)
    return next((e for e in _for_check(expectations, result.check)
                 if e.matches(values, packages, env)), None)
