"""GitHub-hosted macOS runner labels as data (hosted_runners.yaml): which exist, on which
architecture and macOS, and until when.

A cell job on a retired label fails on GitHub before it starts, so mlxcompat checks the labels
it is given against this table (`mlxcompat runners --check`, and a unit test over every label
the project configures) and warns `WARN_DAYS` before a retirement date.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date
from functools import cache
from importlib import resources

import yaml

WARN_DAYS = 90
_MACOS = re.compile(r"^macos-")


@dataclass(frozen=True)
class HostedLabel:
    label: str
    macos: str
    arch: str
    link: str
    deprecated: date | None = None
    retired: date | None = None
    alias: bool = False
    note: str = ""


@cache
def _data() -> dict:
    text = resources.files("mlxcompat").joinpath("hosted_runners.yaml").read_text("utf-8")
    return dict(yaml.safe_load(text))


def _label(name: str, spec: dict) -> HostedLabel:
    unknown = set(spec) - {"macos", "arch", "link", "deprecated", "retired", "alias", "note"}
    if unknown:
        raise ValueError(f"hosted_runners.yaml: {name}: unknown keys {sorted(unknown)}")
    return HostedLabel(label=name, macos=str(spec["macos"]), arch=spec["arch"],
                       link=spec["link"], deprecated=spec.get("deprecated"),
                       retired=spec.get("retired"), alias=bool(spec.get("alias", False)),
                       note=" ".join(str(spec.get("note", "")).split()))


def table() -> dict[str, HostedLabel]:
    return {name: _label(name, spec) for name, spec in _data()["labels"].items()}


def defaults() -> list[str]:
    """The labels cell jobs run on unless a workflow says otherwise."""
    return list(_data()["defaults"])


def is_hosted_macos(label: str) -> bool:
    """Labels of GitHub's hosted macOS images; others (ubuntu-*, self-hosted, mlxcompat's own
    `linux-cpu` or `cuda`) have no lifetime here."""
    return bool(_MACOS.match(label))


def deployment_target(label: str) -> str:
    """MACOSX_DEPLOYMENT_TARGET of a label: the macOS its wheels must support."""
    return table()[label].macos


def check(labels: list[str], today: date | None = None) -> tuple[list[str], list[str]]:
    """(errors, warnings) for labels cell jobs would run on. Errors: an unknown, retired or
    Intel macOS label; warnings: deprecated, or retiring within WARN_DAYS."""
    today = today or date.today()
    known = table()
    errors, warnings = [], []
    for name in labels:
        if not is_hosted_macos(name):
            continue
        spec = known.get(name)
        if spec is None:
            errors.append(f"{name}: not a GitHub-hosted macOS label mlxcompat knows "
                          f"(known: {', '.join(known)}); add it to hosted_runners.yaml")
            continue
        if spec.arch != "arm64":
            errors.append(f"{name}: {spec.arch}, not Apple silicon (mlx runs on arm64 only)")
        if spec.retired and spec.retired <= today:
            errors.append(f"{name}: retired on {spec.retired} ({spec.link}); use "
                          f"{', '.join(defaults())}")
        elif spec.retired and (spec.retired - today).days <= WARN_DAYS:
            warnings.append(f"{name}: retires on {spec.retired}, in "
                            f"{(spec.retired - today).days} days ({spec.link})")
        elif spec.deprecated and spec.deprecated <= today:
            warnings.append(f"{name}: deprecated since {spec.deprecated} ({spec.link})")
    return errors, warnings


def cmd_runners(labels_json: str, today: str = "") -> int:
    """`mlxcompat runners [--check JSON]`: the table, or a check of a workflow's labels."""
    when = date.fromisoformat(today) if today else None
    if not labels_json:
        for spec in table().values():
            life = f"retired {spec.retired}" if spec.retired else "no retirement announced"
            print(f"{spec.label:<16} macOS {spec.macos:<5} {spec.arch:<7} {life}"
                  + ("  (alias)" if spec.alias else ""))
        return 0
    try:
        labels = json.loads(labels_json)
    except ValueError:
        labels = None
    if not isinstance(labels, list) or not all(isinstance(x, str) for x in labels) or not labels:
        print(f"mlxcompat runners: {labels_json!r} is not a JSON list of labels")
        return 2
    errors, warnings = check(labels, when)
    for line in warnings:
        print(f"::warning title=runner label::{line}")
    for line in errors:
        print(f"::error title=runner label::{line}")
    print(f"mlxcompat runners: {len(labels)} label(s), {len(errors)} unusable")
    return 1 if errors else 0
