"""`mlxcompat init` writes mlxcompat's real repository, pinned to a commit, never OWNER."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from mlxcompat import __version__, scaffold
from mlxcompat.origin import OriginError, commit_of, own_repository

RELEASES = {"newest": "0.32.2", "old": "0.31.3", "newest_mlx": "0.32.2", "old_mlx": "0.31.2"}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture
def github(tmp_path, monkeypatch) -> dict[str, str]:
    """A local repository standing in for github.com/<own repository>, with tag v<version>."""
    repo = tmp_path / "standin"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "README").write_text("x")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", f"v{__version__}",
         "-m", "release")
    config = tmp_path / "gitconfig"
    config.write_text(f'[url "file://{repo}"]\n\tinsteadOf = https://github.com/'
                      f"{own_repository()}\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(config))
    monkeypatch.setattr(scaffold, "pick_releases", lambda wheels: RELEASES)
    return {"commit": _git(repo, "rev-parse", "HEAD"), "repo": own_repository()}


def test_the_repository_comes_from_the_package_metadata() -> None:
    assert own_repository() == "mlxcompat/mlxcompat"


def test_init_pins_the_commit_of_the_version_tag(tmp_path, github, capsys) -> None:
    assert scaffold.init_project(tmp_path / "srv", package="srv") == 0
    text = (tmp_path / "srv/.github/workflows/compat.yml").read_text()
    assert "OWNER" not in text and "@main" not in text
    tag = f"v{__version__}"
    uses = f"uses: {github['repo']}/.github/workflows/mlxcompat.yml@{github['commit']}  # {tag}"
    assert uses in text
    harness = yaml.safe_load(text)["jobs"]["compat"]["with"]["harness"]
    assert harness == f"mlxcompat @ git+https://github.com/{github['repo']}@{github['commit']}"
    nox_header = (tmp_path / "srv/noxfile.py").read_text()
    assert f'rev = "{github["commit"]}"' in nox_header
    assert f"{github['commit']} ({tag})" in capsys.readouterr().out


def test_an_unknown_tag_writes_nothing(tmp_path, github, capsys) -> None:
    assert scaffold.init_project(tmp_path / "srv", package="srv", ref="v9.9.9") == 2
    assert "v9.9.9 not found" in capsys.readouterr().err
    assert not (tmp_path / "srv").exists()


def test_a_full_sha_is_used_as_given_and_a_branch_resolves(github) -> None:
    sha = "0123456789abcdef0123456789abcdef01234567"
    assert commit_of("any/repo", sha) == sha
    assert commit_of(github["repo"], "main") == github["commit"]
    with pytest.raises(OriginError, match="nope not found"):
        commit_of(github["repo"], "nope")


def test_the_starter_matrix_knows_upstream_s_mamba_v1_drift(tmp_path, github) -> None:
    """An adopter's first run is not red for upstream's own Mamba v1 padding drift under
    `none` (every release, bounded as mlxcompat measured it); their own subject is not
    covered."""
    from mlxcompat.matrix import load_matrix
    from mlxcompat.records.rows import ResultRow

    assert scaffold.init_project(tmp_path / "srv", package="srv") == 0
    matrix = load_matrix(tmp_path / "srv/matrix.yaml")
    packages = {"mlx-lm": "0.32.2", "mlx": "0.32.2"}

    def entry(delta: float, subject: str = "none"):
        row = ResultRow(check="parity", subject=subject, verdict="fail", model="mamba",
                        mode="fresh", delta=delta, tokens_equal=True)
        found = [e for e in matrix.expectations if e.covers(row, "mlx-lm-0.32.2", packages)]
        return found[0] if found else None

    assert entry(0.07) is not None and entry(0.07).max_delta == 0.1
    assert entry(0.07, subject="srv") is None
