"""Cells from source: a git commit or ref, or a local folder; named by the commit, never as a
release; the identity that `--reuse` compares; what is recorded after the install."""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path

import pytest

from mlxcompat.matrix import MatrixError, parse_matrix
from mlxcompat.source_install import clean_copy, identity, installed, work_tree
from mlxcompat.sources import Source

BASE = {"schema": 3,
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}"}}},
        "subjects": {"none": {}}, "cells": []}
SHA = "eb662895fd9c490d0d31be5220c15922b9111619"


def _cell(**pins: object) -> object:
    doc = copy.deepcopy(BASE)
    doc["cells"] = [{"mlx": "0.32.2", **pins}]
    return parse_matrix(doc).cells[0]


def test_a_commit_pinned_cell_is_named_by_its_commit_and_installs_the_url() -> None:
    cell = _cell(**{"mlx-lm": {"git": "file:///srv/mlx-lm", "commit": SHA}})
    assert cell.id == "git-mlx-lm-eb662895fd9c"
    assert cell.pins == {"mlx": "0.32.2"}
    assert cell.requirements("mlx[cpu]=={v}") == [
        f"mlx-lm @ git+file:///srv/mlx-lm@{SHA}", "mlx[cpu]==0.32.2"]


def test_a_ref_and_a_folder_name_their_cells_too(tmp_path: Path) -> None:
    assert _cell(**{"mlx-lm": {"git": "https://x/y", "ref": "main"}}).id == "git-mlx-lm-main"
    cell = _cell(**{"mlx-vlm": {"path": "../mlx-vlm"}, "mlx-lm": "0.32.2"})
    assert cell.id == "src-mlx-vlm-mlx-vlm"
    assert cell.requirements("mlx[cpu]=={v}", tmp_path)[1] == str((tmp_path / "../mlx-vlm")
                                                                  .resolve())


@pytest.mark.parametrize(("pin", "words"), [
    ({"git": "https://x/y"}, "give exactly one of commit (a sha) or ref"),
    ({"git": "https://x/y", "commit": "main"}, "'main' is not a commit sha"),
    ({"commit": SHA}, "cells[0].mlx-lm.git: give the repository URL"),
    ({"path": "a", "git": "b"}, "a local tree is {path: <folder>} and nothing else"),
    ({"branch": "main"}, "cells[0].mlx-lm.branch: unknown key"),
])
def test_source_mistakes_name_their_key(pin: dict, words: str) -> None:
    doc = copy.deepcopy(BASE)
    doc["cells"] = [{"mlx": "0.32.2", "mlx-lm": pin}]
    with pytest.raises(MatrixError) as info:
        parse_matrix(doc)
    assert words in str(info.value)


def _repo(path: Path) -> str:
    path.mkdir()
    (path / "a.py").write_text("x = 1\n")
    for cmd in (["init", "-q"], ["add", "-A"],
                ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "one"]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True)
    return subprocess.run(["git", "-C", str(path), "rev-parse", "HEAD"], check=True,
                          capture_output=True, text=True).stdout.strip()


def test_identity_is_the_commit_a_ref_resolves_to_or_the_tree_hash(tmp_path: Path) -> None:
    sha = _repo(tmp_path / "repo")
    assert identity(Source("mlx-lm", git=f"file://{tmp_path / 'repo'}", ref="HEAD"),
                    tmp_path) == sha
    tree = identity(Source("mlx-lm", path="repo"), tmp_path)
    (tmp_path / "repo" / "a.py").write_text("x = 2\n")
    assert tree.startswith("tree:") and identity(Source("mlx-lm", path="repo"), tmp_path) != tree
    assert work_tree(tmp_path / "repo") == (sha, True)  # a local change is recorded as dirty


def test_what_was_installed_comes_from_the_dist_info(tmp_path: Path) -> None:
    info = tmp_path / "lib" / "python3.11" / "site-packages" / "mlx_lm-0.32.2.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: mlx-lm\nVersion: 0.32.2\n")
    (info / "direct_url.json").write_text(json.dumps(
        {"url": "file:///srv/mlx-lm", "vcs_info": {"vcs": "git", "commit_id": SHA}}))
    got = installed(Source("mlx-lm", git="file:///srv/mlx-lm", ref="main"), tmp_path, tmp_path)
    assert (got.version, got.commit) == ("0.32.2", SHA)
    assert got.requested == "mlx-lm @ git+file:///srv/mlx-lm@main"


def test_a_subject_tree_without_packaging_metadata_runs_from_where_it_is(tmp_path: Path) -> None:
    from mlxcompat.matrix_entries import SubjectSpec, packaged

    engine, lib = tmp_path / "mlx-engine", tmp_path / "lib"
    (engine / "mlx_engine").mkdir(parents=True)
    (engine / "requirements.txt").write_text("mlx==0.32.0\n")
    lib.mkdir()
    (lib / "pyproject.toml").write_text("[project]\nname = 'lib'\n")
    spec = SubjectSpec("engine", install=("./mlx-engine", "./lib", "somepkg==1"))
    assert spec.folders(tmp_path) == (engine, lib)
    assert (packaged(engine), packaged(lib)) == (False, True)


def test_a_local_tree_installs_from_a_copy_without_its_build_leftovers(tmp_path: Path) -> None:
    """setuptools packs what an earlier build left in the tree's build/lib (a module deleted
    since): the install reads a copy without the top-level build/; the tree's own files, a
    package folder named build and .git stay."""
    tree = tmp_path / "mlx-lm"
    for rel in ("mlx_lm/a.py", "mlx_lm/build/kept.py", "build/lib/mlx_lm/ghost.py",
                ".git/HEAD", "mlx_lm/__pycache__/a.cpython-311.pyc"):
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text("x = 1\n")
    venv = tmp_path / "venv"
    copied = clean_copy(Source("mlx-lm", path="mlx-lm"), tmp_path, venv)
    assert copied == venv / "sources" / "mlx-lm"
    assert sorted(str(p.relative_to(copied)) for p in copied.rglob("*") if p.is_file()) == [
        ".git/HEAD", "mlx_lm/a.py", "mlx_lm/build/kept.py"]
    (tree / "mlx_lm/a.py").unlink()
    copied = clean_copy(Source("mlx-lm", path="mlx-lm"), tmp_path, venv)  # made afresh
    assert not (copied / "mlx_lm/a.py").exists()
