"""Adopt without copying: the built wheel, installed into a scratch server repository, runs a
cell and the report end to end with the server's own patches, role and model.

A fresh venv gets the wheel, nox and uv; `mlxcompat --help`, `mlxcompat init` (pinned to
this checkout's commit: GitHub is out of reach here) and `mlxcompat list` run outside this
repository; the init output is edited to point at the
server's package (an existing role, a new role, a new model) and `nox -s "matrix(...)"`
then `nox -s report` run there. Needs uv, PyPI for the cell's packages, and no hub.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
SERVER = Path(__file__).parent / "server_template"


def _run(cmd: list[str], cwd: Path, env: dict[str, str], timeout: int = 900) -> str:
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{out[-4000:]}"
    return out


def _edit(matrix_file: Path) -> None:
    """What a maintainer does after `mlxcompat init`: their entry points, model and role."""
    doc = yaml.safe_load(matrix_file.read_text())
    doc["models"] = {"tiny_qwen3": {"factory": "tinyserver.models:tiny_qwen3", "runner": "lm",
                                    "modes": ["fresh", "staggered", "leave", "history"]}}
    doc["roles"] = {"prefill-chunk": {"targets": ["tinyserver.models"], "checks": ["parity"],
                                      "models": ["tiny_qwen3"]}}
    doc["subjects"]["tinyserver"]["entry_points"] = {
        "mamba": "tinyserver.ssm:ensure_mamba_support",
        "prefill-chunk": "tinyserver.batching:apply"}
    doc["defaults"]["models"] = ["llama", "mamba2", "tiny_qwen3"]
    newest = next(c for c in doc["cells"] if "quick" in c.get("tags", []))
    doc["cells"] = [newest]
    doc["settings"]["bench"]["default"] = "off"
    matrix_file.write_text(yaml.safe_dump(doc, sort_keys=False))


@pytest.mark.skipif(shutil.which("uv") is None, reason="uv is not on PATH")
def test_a_server_repository_adopts_the_wheel(tmp_path: Path) -> None:
    start = time.perf_counter()
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for key in ("MLXCOMPAT_MATRIX", "MLXCOMPAT_RAW", "MLXCOMPAT_LABEL", "VIRTUAL_ENV"):
        env.pop(key, None)
    dist = tmp_path / "dist"
    # the wheel from the sdist, as the release does: a wheel built in the tree would take in
    # whatever an earlier build left under build/lib, a module since deleted included
    _run(["uv", "build", "--out-dir", str(dist), str(ROOT)], tmp_path, env)
    wheel = next(dist.glob("mlxcompat-*.whl"))
    venv = tmp_path / "venv"
    _run(["uv", "venv", str(venv), "--python", "3.11"], tmp_path, env)
    _run(["uv", "pip", "install", "--python", str(venv), str(wheel), "nox", "uv"], tmp_path, env)
    bin_ = venv / "bin"
    env["PATH"] = f"{bin_}{os.pathsep}{env['PATH']}"
    server = tmp_path / "server"
    shutil.copytree(SERVER, server)

    assert "usage: mlxcompat" in _run([str(bin_ / "mlxcompat"), "--help"], server, env)
    head = _run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], ROOT, env).strip()
    _run([str(bin_ / "mlxcompat"), "init", "--package", "tinyserver", "--ref", head], server, env)
    refused = subprocess.run([str(bin_ / "mlxcompat"), "init"], cwd=server, env=env,
                             capture_output=True, text=True, check=False)
    assert refused.returncode == 1 and "nothing written" in refused.stderr
    _edit(server / "matrix.yaml")
    listing = _run([str(bin_ / "mlxcompat"), "list"], server, env)
    assert "tiny_qwen3" in listing and "prefill-chunk" in listing

    cell = yaml.safe_load((server / "matrix.yaml").read_text())["cells"][0]
    cell_id = f"mlx-lm-{cell['mlx-lm']}"
    _run([str(bin_ / "nox"), "-s", f"matrix({cell_id})"], server,
         {**env, "MLXCOMPAT_SKIP_REPORT": "1"})
    doc = json.loads((server / "reports" / "raw" / f"{cell_id}.json").read_text())
    assert doc["env"]["packages"]["mlxcompat"], "the cell installed the wheel"
    rows = {(r["check"], r["model"], r["mode"] or r["role"], r["subject"]): r
            for r in doc["results"]}
    assert rows[("parity", "tiny_qwen3", "history", "tinyserver")]["verdict"] == "pass"
    assert rows[("patch-status", "", "prefill-chunk", "tinyserver")]["verdict"] == "pass"
    assert rows[("idempotence", "", "prefill-chunk", "tinyserver")]["verdict"] == "pass"
    report = subprocess.run([str(bin_ / "nox"), "-s", "report"], cwd=server, env=env,
                            capture_output=True, text=True, timeout=900, check=False)
    md = (server / "reports" / "compat.md").read_text()
    assert "tiny_qwen3" in md and "prefill-chunk" in md
    assert "mlxcompat report:" in report.stdout + report.stderr
    print(f"adoption run: {time.perf_counter() - start:.0f}s")
