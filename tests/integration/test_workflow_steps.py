"""The CI jobs run here: every `run:` step of the workflows, in GitHub's order, from a fresh
clone (gha_runner), for this repository and for an adopter made by `mlxcompat init`.

Both go generate -> one quick cell on each default macOS label (run here on Linux with the CPU
backend: the one stand-in) and on linux-cpu -> report -> gate. The matrix is narrowed to that
one cell (2 subjects, 2 models, bench off), as a maintainer's matrix could be. The adopter's
harness comes from a local git repository standing in for github.com/<mlxcompat's repository>:
a clone of this tree tagged v<version>, reached through git's `insteadOf`, so the workflow,
the harness URL and `mlxcompat init` run unchanged.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from gha_runner import Fixture, Runner

from mlxcompat import __version__
from mlxcompat.hosted import defaults
from mlxcompat.origin import own_repository

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).parent / "server_template"
CELL = "mlx-lm-0.32.2"
PASS = ("PIP_", "UV_", "SSL_", "REQUESTS_", "CURL_", "HTTP", "http", "NO_PROXY", "no_proxy",
        "LANG", "TMPDIR")
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is not on PATH")


def _git(where: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(where), "-c", "user.name=ci", "-c",
                           "user.email=ci@example.org", *args], capture_output=True,
                          text=True, check=True).stdout.strip()


def _commit(repo: Path, tag: str = "") -> str:
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fixture")
    if tag:
        _git(repo, "tag", "-a", tag, "-m", tag)
    return _git(repo, "rev-parse", "HEAD")


def this_tree(dest: Path) -> Path:
    """The working tree as a clone would have it (tracked and new files, no ignored ones)."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-co", "--exclude-standard",
                            "-z"], capture_output=True, text=True, check=True).stdout
    for name in filter(None, names.split("\0")):
        if (ROOT / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, dest / name)
    return dest


def narrow(matrix_file: Path, cell: dict) -> None:
    """One quick cell, none + the project's own subject, two models, no throughput."""
    doc = yaml.safe_load(matrix_file.read_text())
    doc["cells"] = [{**cell, "tags": ["quick"], "models": ["llama", "mamba2"]}]
    name = f"mlx-lm-{cell['mlx-lm']}"
    doc["expectations"] = [e for e in (_only_cell(e, name) for e in doc.get("expectations", []))
                           if e]
    doc["settings"]["bench"]["default"] = "off"
    doc.pop("runners", None)
    matrix_file.write_text(yaml.safe_dump(doc, sort_keys=False))


def _only_cell(entry: dict, name: str) -> dict | None:
    """An expectation scoped to cells by name keeps the narrowed cell, or goes: the matrix
    refuses a cell name it does not know, as it would for a user who cut matrix.yaml."""
    match = entry.get("match", {})
    if "cell" not in match:
        return entry
    kept = [c for c in match["cell"] if c == name]
    return {**entry, "match": {**match, "cell": kept}} if kept else None


def fixture(root: Path, repository: str, source: Path, **extra) -> Fixture:
    env = {k: v for k, v in os.environ.items() if k.startswith(PASS)}
    env.update(extra.pop("env", {}))
    mac = {label: {"MLXCOMPAT_BACKEND": "cpu"} for label in defaults()}
    return Fixture(root=root, repository=repository, source=source, label_env=mac,
                   base_env=env, **extra)


def _explain(fx: Fixture, results: dict) -> str:
    bad = "\n".join(f"{n}: {r.failed_step}\n{r.tail[-3000:]}" for n, r in results.items()
                    if r.result == "failure")
    return "\n".join(fx.log) + "\n" + bad


def assert_green(fx: Fixture, results: dict, cells: int, subjects: set[str]) -> dict:
    assert results["compat"].result == "success", _explain(fx, results)
    verdict = results["compat"].outputs["verdict"]
    assert verdict.startswith(f"mlxcompat report: OK: {cells} cells, unexpected: 0"), verdict
    artifacts = sorted(p.name for p in (fx.root / "artifacts").iterdir())
    labels = sorted([*defaults(), "linux-cpu"])
    assert artifacts == sorted(["cell-linux-cpu", "compat-report",
                                *(f"cell-{CELL}-{lb}" for lb in defaults())]), artifacts
    report = json.loads((fx.root / "artifacts/compat-report/compat.json").read_text())
    assert report["labels"] == labels and report["unexpected"] == 0
    for label in labels:
        art = fx.root / "artifacts" / (f"cell-{CELL}-{label}" if label != "linux-cpu"
                                       else "cell-linux-cpu")
        doc = json.loads((art / f"{CELL}@{label}.json").read_text())
        rows = doc["results"]
        assert doc["complete"] and {r["subject"] for r in rows} == subjects, label
        assert {r["model"] for r in rows if r["check"] == "parity"} == {"llama", "mamba2"}
        assert sum(r["verdict"] == "pass" for r in rows) > 20, label
    return report


def test_this_repository_ci_runs_from_a_fresh_clone(tmp_path) -> None:
    start = time.perf_counter()
    repo = this_tree(tmp_path / "repo")
    narrow(repo / "matrix.yaml", {"mlx-lm": "0.32.2", "mlx": "0.32.2",
                                  "subjects": ["none", "mlxcompat"]})
    _commit(repo)
    fx = fixture(tmp_path / "github", own_repository(), repo)
    results = Runner(fx).run_file(repo / ".github/workflows/compat.yml")
    assert results["releases"].result == "skipped"
    assert_green(fx, results, cells=1 + len(defaults()), subjects={"none", "mlxcompat"})
    print(f"this repository's CI here: {time.perf_counter() - start:.0f}s\n" + "\n".join(fx.log))


def test_an_adopter_made_by_init_runs_from_a_fresh_clone(tmp_path) -> None:
    start = time.perf_counter()
    own = own_repository()
    standin = this_tree(tmp_path / "standin")
    commit = _commit(standin, tag=f"v{__version__}")
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "file://{standin}"]\n\tinsteadOf = https://github.com/{own}\n'
                      '[protocol "file"]\n\tallow = always\n')
    env = {k: v for k, v in os.environ.items() if k.startswith(PASS)}
    env.update(GIT_CONFIG_GLOBAL=str(config), HOME=os.environ["HOME"],
               PATH=f"{tmp_path / 'user/bin'}:/usr/bin:/bin")
    uv = [sys.executable, "-m", "uv"]
    subprocess.run([*uv, "venv", "-q", str(tmp_path / "user"), "--python", sys.executable],
                   check=True, env=env)
    subprocess.run([*uv, "pip", "install", "-q", "--python", str(tmp_path / "user"),
                    f"mlxcompat @ git+https://github.com/{own}@v{__version__}"],
                   check=True, env=env)
    server = tmp_path / "server"
    shutil.copytree(SERVER, server)
    init = subprocess.run(["mlxcompat", "init", "--package", "tinyserver"], cwd=server,
                          env=env, capture_output=True, text=True, check=False)
    assert init.returncode == 0, init.stdout + init.stderr
    assert f"uses {own} at {commit} (v{__version__})" in init.stdout
    doc = yaml.safe_load((server / "matrix.yaml").read_text())
    doc["subjects"]["tinyserver"]["entry_points"] = {"mamba": "tinyserver.ssm:ensure_mamba_support"}
    (server / "matrix.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    newest = next(c for c in doc["cells"] if "quick" in c.get("tags", []))
    narrow(server / "matrix.yaml", {k: v for k, v in newest.items() if k != "tags"})
    _commit(server)
    fx = fixture(tmp_path / "github", "example/tinyserver", server, standins={own: standin},
                 env={"GIT_CONFIG_GLOBAL": str(config)})
    results = Runner(fx).run_file(server / ".github/workflows/compat.yml")
    assert_green(fx, results, cells=1 + len(defaults()), subjects={"none", "tinyserver"})
    raw = fx.root / "artifacts" / "cell-linux-cpu"
    cell_doc = json.loads(next(raw.glob("*@linux-cpu.json")).read_text())
    assert cell_doc["install"]["harness"] == [f"mlxcompat @ git+https://github.com/{own}@{commit}"]
    print(f"the adopter's CI here: {time.perf_counter() - start:.0f}s\n" + "\n".join(fx.log))


def test_the_action_installs_the_harness_from_its_own_checkout(tmp_path) -> None:
    """`uses: ./` (the composite action at the root) in a job: nox, uv and the mlxcompat of
    `github.action_path` land in the job's Python; `harness:` is passed through quoted."""
    repo = this_tree(tmp_path / "repo")
    _commit(repo)
    steps = [{"uses": "actions/checkout@x", "with": {"persist-credentials": False}},
             {"uses": "actions/setup-python@x", "with": {"python-version": "3.11"}},
             {"id": "setup", "uses": "./"},
             {"id": "check", "run": 'mlxcompat runners --check "$LABELS"\n'
                                    'python -c "import uv, nox" && echo ok=yes >> "$GITHUB_OUTPUT"',
              "env": {"LABELS": '["macos-15"]'}}]
    doc = {"jobs": {"a": {"runs-on": "ubuntu-24.04", "steps": steps,
                          "outputs": {"ok": "${{ steps.check.outputs.ok }}",
                                      "harness": "${{ steps.setup.outputs.harness }}"}}}}
    fx = fixture(tmp_path / "github", own_repository(), repo)
    result = Runner(fx).run_workflow(doc, {})["a"]
    assert result.result == "success", _explain(fx, {"a": result})
    assert result.outputs["ok"] == "yes"
    assert result.outputs["harness"].endswith("/work"), result.outputs
