"""The CI workflow stays in step with the noxfile and names no release itself."""

from __future__ import annotations

import itertools
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "compat.yml"
sys.path.insert(0, str(ROOT / ".github" / "scripts"))


@pytest.fixture(scope="module")
def sessions() -> list[dict]:
    out = subprocess.run([sys.executable, "-m", "nox", "-l", "--json"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out)


def _run_lines() -> list[str]:
    doc = yaml.safe_load(WORKFLOW.read_text())
    lines = []
    for job in doc["jobs"].values():
        for step in job.get("steps", []):
            lines += [line.strip() for line in str(step.get("run", "")).splitlines()]
    return [line for line in lines if line]


def _nox_calls() -> list[list[str]]:
    calls = []
    for line in _run_lines():
        for part in line.split("|"):
            words = shlex.split(part)
            if words and words[0] == "nox":
                calls.append(words[1:])
    return calls


def test_every_nox_session_and_tag_the_workflow_calls_exists(sessions) -> None:
    names = {s["name"] for s in sessions} | {s["session"] for s in sessions}
    tags = {t for s in sessions for t in s.get("tags", [])}
    calls = _nox_calls()
    assert calls, "the workflow runs nox"
    for args in calls:
        for flag, value in itertools.pairwise(args):
            if flag == "-s":
                name = re.sub(r"\(\$\{\{.*\}\}\)$", "", value)
                assert name in names, f"workflow calls unknown nox session {value!r}"
            if flag == "-t":
                assert value in tags, f"workflow selects unknown nox tag {value!r}"


def test_no_release_is_named_in_the_workflow() -> None:
    text = WORKFLOW.read_text()
    without_actions = re.sub(r"uses: \S+", "", text)
    assert not re.search(r"\b\d+\.\d+\.\d+\b", without_actions.replace("3.11", "")), \
        "release versions belong to matrix.yaml"
    assert "mlx-lm==" not in text and "mlx-vlm==" not in text


def test_cell_list_is_derived_from_nox(sessions) -> None:
    from cells import cells

    every = cells(sessions, "all")
    quick = cells(sessions, "quick")
    assert every == [s["call_spec"]["cell"] for s in sessions if s["name"] == "matrix"]
    assert quick and set(quick) < set(every)


def test_least_privilege() -> None:
    doc = yaml.safe_load(WORKFLOW.read_text())
    assert doc["permissions"] == {"contents": "read"}
    assert "pull_request_target" not in WORKFLOW.read_text()
    for job in doc["jobs"].values():
        for step in job.get("steps", []):
            uses = step.get("uses")
            if uses:
                assert re.search(r"@v\d+\.\d+\.\d+$", uses), f"{uses} is not pinned to a release"
