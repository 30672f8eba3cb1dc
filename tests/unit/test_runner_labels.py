"""Runner labels are data with lifetimes: nothing the project configures is past retirement."""

from __future__ import annotations

import json
import re
import warnings
from datetime import date
from pathlib import Path

import yaml

from mlxcompat.cli import main
from mlxcompat.hosted import WARN_DAYS, check, defaults, deployment_target, table

ROOT = Path(__file__).resolve().parents[2]
LABEL = re.compile(r"\bmacos-[0-9a-z]+(?:-[0-9a-z]+)*\b")


def _reusable_default() -> list[str]:
    doc = yaml.safe_load((ROOT / ".github/workflows/mlxcompat.yml").read_text())
    return json.loads(doc[True]["workflow_call"]["inputs"]["runners"]["default"])


def configured_labels() -> dict[str, list[str]]:
    """Every macOS label the project names: the workflow's default input, every workflow and
    the action, the README, the adopter templates, matrix.yaml's runner labels."""
    found = {"workflow default": _reusable_default(), "hosted defaults": defaults()}
    texts = [*(ROOT / ".github/workflows").glob("*.yml"), ROOT / "action.yml",
             ROOT / "README.md", *(ROOT / "src/mlxcompat/templates").glob("*.tmpl")]
    for path in texts:
        found[path.name] = LABEL.findall(path.read_text())
    found["matrix.yaml runners"] = list(yaml.safe_load((ROOT / "matrix.yaml").read_text())
                                        .get("runners") or {})
    return found


def test_every_configured_label_is_supported_today() -> None:
    labels = configured_labels()
    assert labels["workflow default"] and labels["README.md"], "labels are found where named"
    for where, names in labels.items():
        errors, warned = check(names)
        assert not errors, f"{where}: {errors}"
        for line in warned:
            warnings.warn(f"{where}: {line}", stacklevel=1)


def test_defaults_are_the_workflow_default_and_apple_silicon() -> None:
    assert _reusable_default() == defaults() == ["macos-15", "macos-26"]
    assert all(table()[label].arch == "arm64" and not table()[label].alias for label in defaults())
    assert [deployment_target(label) for label in defaults()] == ["15.0", "26.0"]


def test_a_label_past_its_retirement_date_fails() -> None:
    errors, _ = check(["macos-14", "macos-15"], date(2026, 11, 2))
    assert len(errors) == 1 and "macos-14: retired on 2026-11-02" in errors[0]
    assert "runner-images/issues/13518" in errors[0]
    assert check(["macos-14"], date(2026, 12, 1))[0], "still retired a month later"


def test_a_label_retiring_within_90_days_warns() -> None:
    errors, warned = check(["macos-14"], date(2026, 11, 1))
    assert not errors and warned == [
        "macos-14: retires on 2026-11-02, in 1 days "
        "(https://github.com/actions/runner-images/issues/13518)"]
    before = date.fromordinal(date(2026, 11, 2).toordinal() - WARN_DAYS)
    assert check(["macos-14"], before)[1], f"{WARN_DAYS} days ahead it warns"
    assert check(["macos-14"], date(2026, 6, 1)) == ([], [])


def test_unknown_and_intel_labels_fail() -> None:
    errors, _ = check(["macos-99", "macos-15-intel", "ubuntu-24.04", "linux-cpu", "cuda"])
    assert [e.split(":")[0] for e in errors] == ["macos-99", "macos-15-intel"]


def test_runners_command_fails_on_the_old_default(capsys) -> None:
    assert main(["runners", "--check", '["macos-14", "macos-15"]', "--today",
                 "2026-12-01"]) == 1
    assert "::error title=runner label::macos-14: retired on 2026-11-02" in capsys.readouterr().out
    assert main(["runners", "--check", json.dumps(defaults())]) == 0
    assert main(["runners", "--check", "macos-15"]) == 2
