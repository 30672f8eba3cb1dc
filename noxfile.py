"""Sessions: tests (the harness's own tests), lint (ruff)."""

from __future__ import annotations

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests", "lint"]

# The unit tests run twice: with the newest releases (patches must step aside) and with
# an mlx-lm whose caches cannot batch SSM state (the Mamba patch must apply).
UNIT_ENVS = {
    "latest": [".[test,latest]"],
    "legacy": [".[test]", "mlx-lm==0.29.1", "mlx[cpu]==0.29.2; sys_platform == 'linux'",
               "mlx==0.29.2; sys_platform == 'darwin'"],
}


@nox.session(python="3.11")
@nox.parametrize("env", list(UNIT_ENVS), ids=list(UNIT_ENVS))
def tests(session: nox.Session, env: str) -> None:
    """Unit tests of the harness (latest releases, and an old mlx-lm for the patch paths)."""
    session.run_install("uv", "pip", "install", "-e", *UNIT_ENVS[env],
                        "--python", session.virtualenv.location, external=True)
    session.run("pytest", "tests/unit", *session.posargs, env={"HF_HUB_OFFLINE": "1"})


@nox.session(python="3.11")
def lint(session: nox.Session) -> None:
    """ruff over the whole tree."""
    session.install("ruff")
    session.run("ruff", "check", ".")
