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
    own = ["-s", "tests", "lint", "installable"]
    for extra in ([], ["-t", "maintenance"], ["-t", "canary"], own):
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


# The commit of each action tag, read from the action's own repository (git rev-parse
# <tag>^{commit}); a `uses:` line must pin exactly this commit and name the tag beside it.
PINS = {
    "actions/checkout": ("8e8c483db84b4bee98b60c0593521ed34d9990e8", "v6.0.1"),
    "actions/setup-python": ("e797f83bcb11b83ae66e0230d6156d7c80228e7c", "v6.0.0"),
    "astral-sh/setup-uv": ("c771a70e6277c0a99b617c7a806ffedaca235ff9", "v9.0.0"),
    "actions/upload-artifact": ("bbbca2ddaa5d8feaa63e36b76fdaad77386f024f", "v7.0.0"),
    "actions/download-artifact": ("37930b1c2abaa49bbe596cd826c3c89aef350131", "v7.0.0"),
    "pypa/gh-action-pypi-publish": ("81e9d935c883d0b210363ab89cf05f3894778450", "v1.8.14"),
}


def test_github_rules() -> None:
    """Least privilege (nothing at the top, read per job, one id-token for publishing),
    actions pinned to the commit of a named tag, a timeout on every job, artifacts that
    survive a re-run, and cancellation only for pull requests."""
    for path in WORKFLOWS:
        doc = _doc(path)
        assert doc["permissions"] == {}, path.name
        assert "pull_request_target" not in path.read_text()
        for name, job in doc["jobs"].items():
            allowed = [{}, {"contents": "read"}, {"id-token": "write"}]
            assert job.get("permissions", "none") in allowed, f"{path.name}:{name}"
            if "uses" in job:
                continue
            assert "timeout-minutes" in job, f"{path.name}:{name} has no timeout"
            for step in job.get("steps", []):
                uses = step.get("uses", "")
                if uses.startswith("actions/checkout"):
                    assert step["with"]["persist-credentials"] is False, f"{path.name}:{name}"
                if uses.startswith("actions/upload-artifact") and path.name != "release.yml":
                    assert step["with"].get("overwrite") is True, f"{path.name}:{name}"
    caller = _doc(ROOT / ".github" / "workflows" / "compat.yml")
    assert caller["on"]["push"] == {"branches": ["main"]}
    assert "pull_request" in caller["concurrency"]["cancel-in-progress"]


def test_every_action_is_pinned_to_the_commit_of_its_tag() -> None:
    found = 0
    for path in [*WORKFLOWS, ROOT / "action.yml"]:
        for line in path.read_text().splitlines():
            match = re.match(r"\s*-?\s*uses: ([\w.-]+/[\w.-]+)@(\S+)(?:\s+#\s+(\S+))?", line)
            if not match:
                continue
            found += 1
            action, ref, tag = match.groups()
            assert PINS.get(action) == (ref, tag), f"{path.name}: {line.strip()}"
    assert found >= 20


def _run_steps(path: Path) -> list[tuple[str, dict]]:
    doc = yaml.safe_load(path.read_text())
    jobs = doc.get("jobs") or {"action": {"steps": doc["runs"]["steps"]}}
    return [(name, step) for name, job in jobs.items() for step in job.get("steps", [])
            if "run" in step]


def test_no_expression_is_pasted_into_a_script() -> None:
    """Values reach `run:` through `env:` (quoted there), never as `${{ }}` in the script."""
    from mlxcompat.scaffold import FILES

    templates = [ROOT / "src/mlxcompat/templates" / t for t in FILES.values()
                 if t.endswith(".yml.tmpl")]
    for path in [*WORKFLOWS, ROOT / "action.yml", *templates]:
        for name, step in _run_steps(path):
            assert "${{" not in step["run"], f"{path.name}:{name}: {step['run'][:80]}"


def test_every_job_that_runs_nox_installs_uv_with_it() -> None:
    """nox reads the noxfile's script header (nox, uv, mlxcompat): without the uv package it
    builds an environment of its own and looks mlxcompat up on the index."""
    for path in WORKFLOWS:
        for name, job in _doc(path)["jobs"].items():
            steps = job.get("steps", [])
            if not any("nox " in s.get("run", "") for s in steps):
                continue
            installs = [s.get("run", "") for s in steps if "pip install" in s.get("run", "")]
            assert any(" uv " in f" {r} " for r in installs) or \
                any(s.get("uses") == "./" for s in steps), f"{path.name}:{name}"


def test_the_uv_cache_is_saved_from_the_default_branch_only() -> None:
    expected = ("${{ github.ref == format('refs/heads/{0}', "
                "github.event.repository.default_branch) }}")
    found = 0
    for path in WORKFLOWS:
        for name, job in _doc(path)["jobs"].items():
            for step in job.get("steps", []):
                if step.get("uses", "").startswith("astral-sh/setup-uv"):
                    found += 1
                    opts = step.get("with", {})
                    assert opts.get("enable-cache") is False or \
                        opts.get("save-cache") == expected, f"{path.name}:{name}"
    assert found >= 3


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


def test_the_verdict_is_set_when_the_report_fails(tmp_path) -> None:
    """The report step, run as the runner runs it with a nox that fails as the report does:
    the step fails and the job's `verdict` output still says why."""
    doc = _doc(REUSABLE)
    step = next(s for s in doc["jobs"]["report"]["steps"] if s.get("id") == "report")
    shell = (doc.get("defaults") or {}).get("run", {}).get("shell")
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "nox").write_text("#!/bin/sh\necho 'mlxcompat report: FAILED: 1 missing cell(s)'\n"
                              "exit 1\n")
    (fake / "nox").chmod(0o755)
    script, out = tmp_path / "step.sh", tmp_path / "output"
    script.write_text(step["run"])
    out.touch()
    cmd = ["bash", "--noprofile", "--norc", "-eo", "pipefail"] if shell == "bash" else \
        ["bash", "-e"]
    env = {"PATH": f"{fake}:/usr/bin:/bin", "GITHUB_OUTPUT": str(out), "TAG": "quick",
           "LABELS": "macos-15,linux-cpu", "MLXCOMPAT_RAW": "ci/raw"}
    (tmp_path / "ci").mkdir()
    proc = subprocess.run([*cmd, str(script)], cwd=tmp_path, env=env, check=False)
    assert proc.returncode == 1
    assert out.read_text() == "verdict=mlxcompat report: FAILED: 1 missing cell(s)\n"
