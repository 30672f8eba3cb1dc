"""The CI workflows stay in step with the matrix, the noxfile and GitHub's rules."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
REUSABLE = ROOT / ".github" / "workflows" / "mlxcompat.yml"


def _doc(path: Path) -> dict:
    doc = yaml.safe_load(path.read_text())
    doc["on"] = doc.pop(True, doc.get("on"))  # YAML reads a bare `on:` key as True
    return doc


@pytest.fixture(scope="module")
def sessions() -> list[dict]:
    """Every session: the default ones and the maintenance ones (`nox -l` lists only the
    selected)."""
    found = []
    for extra in ([], ["-t", "maintenance"]):
        out = subprocess.run([sys.executable, "-m", "nox", "-l", "--json", *extra], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        found += json.loads(out[out.index("["):out.rindex("]") + 1])
    return found


def _run_lines(path: Path) -> list[str]:
    lines = []
    for job in _doc(path)["jobs"].values():
        for step in job.get("steps", []):
            lines += [line.strip() for line in str(step.get("run", "")).splitlines()]
    return [line for line in lines if line]


def _calls(tool: str) -> list[list[str]]:
    calls = []
    for path in WORKFLOWS:
        for line in _run_lines(path):
            for part in line.split("|"):
                text = part.replace("${", "X").replace("$", "")
                try:
                    words = shlex.split(text)
                except ValueError:
                    words = text.split()
                if words and words[0].split("/")[-1] == tool:
                    calls.append(words[1:])
    return calls


def test_every_nox_session_the_workflows_call_exists(sessions) -> None:
    names = {s["name"] for s in sessions} | {s["session"] for s in sessions}
    calls = _calls("nox")
    assert calls
    for args in calls:
        if "-s" not in args:
            continue
        for value in args[args.index("-s") + 1:]:
            if value.startswith("-"):
                break
            name = re.sub(r"\(.*\)$", "", value)
            if name.startswith("X") or name.startswith("sessions["):
                continue  # built in the step from the job matrix
            assert name in names, f"a workflow calls unknown nox session {value!r}"


def test_every_mlxcompat_command_the_workflows_call_exists() -> None:
    from mlxcompat.cli import build_parser

    parser = build_parser()
    calls = _calls("mlxcompat")
    assert calls
    for args in calls:
        words = [a for a in args if a not in (">>",) and not a.startswith("GITHUB")]
        parsed, _ = parser.parse_known_args(words)
        assert parsed.command, f"no mlxcompat command in {args}"


def test_no_release_is_named_in_a_workflow() -> None:
    for path in WORKFLOWS:
        text = re.sub(r"uses: \S+", "", path.read_text())
        assert not re.search(r"\b\d+\.\d+\.\d+\b", text.replace("3.11", "")), path.name
        assert "mlx-lm==" not in text and "mlx-vlm==" not in text


def test_cells_come_from_the_matrix() -> None:
    from mlxcompat.cli import main

    out = subprocess.run([sys.executable, "-m", "mlxcompat.cli", "--matrix",
                          str(ROOT / "matrix.yaml"), "cells", "--tag", "quick"],
                         capture_output=True, text=True, check=True).stdout
    quick = json.loads(out.removeprefix("cells="))
    assert "mlx-lm-0.32.2" in quick and len(quick) < 10
    assert main(["--matrix", str(ROOT / "matrix.yaml"), "cells", "--tag", "nope"]) == 2


def test_github_rules() -> None:
    """Least privilege, actions pinned to releases, a timeout on every job, artifacts that
    survive a re-run, and cancellation only for pull requests."""
    for path in WORKFLOWS:
        doc = _doc(path)
        assert doc["permissions"] == {"contents": "read"}, path.name
        assert "pull_request_target" not in path.read_text()
        for name, job in doc["jobs"].items():
            if "uses" in job:
                continue
            assert "timeout-minutes" in job, f"{path.name}:{name} has no timeout"
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                if uses:
                    assert re.search(r"@v\d+\.\d+\.\d+$", uses), f"{uses} is not a release"
                if uses.startswith("actions/upload-artifact"):
                    assert step["with"].get("overwrite") is True, f"{path.name}:{name}"
    caller = _doc(ROOT / ".github" / "workflows" / "compat.yml")
    assert caller["on"]["push"] == {"branches": ["main"]}
    assert "pull_request" in caller["concurrency"]["cancel-in-progress"]


def test_report_job_reads_only_this_runs_artifacts() -> None:
    report = _doc(REUSABLE)["jobs"]["report"]
    download = next(s for s in report["steps"] if s.get("uses", "").startswith(
        "actions/download-artifact"))
    assert download["with"]["path"] == "ci/raw"
    run = next(s for s in report["steps"] if s.get("id") == "report")
    assert run["env"]["MLXCOMPAT_RAW"] == "ci/raw"


def test_reusable_workflow_inputs() -> None:
    inputs = _doc(REUSABLE)["on"]["workflow_call"]["inputs"]
    assert {"matrix", "tag", "runners", "python", "harness"} <= set(inputs)
