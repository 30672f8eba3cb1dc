"""The real nox matrix machinery on a tiny matrix, failing closed: a cell that does not
install and a subject that does not install are recorded with their reasons, the next cell
still runs, and the report fails naming both. Needs nox, uv and PyPI (as `.ci/run` provides)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TINY = {
    "schema": 3,
    "settings": {"bench": {"default": "off"}, "timeout_s": 600},
    "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}",
                                                          "darwin": "mlx=={v}"}}},
    "subjects": {"none": {}, "ghost": {"install": ["vllm-mlx==0.0.999"],
                                       "entry_points": {"mamba": "vllm_mlx.x:y"}}},
    "checks": ["parity"],
    "cells": [{"mlx-lm": "0.0.999", "mlx": "0.32.2", "models": ["llama"], "subjects": ["none"]},
              {"mlx-lm": "0.32.2", "mlx": "0.32.2", "models": ["llama"],
               "subjects": ["none", "ghost"]}],
}


@pytest.mark.skipif(shutil.which("nox") is None or shutil.which("uv") is None,
                    reason="nox and uv are not on PATH")
def test_install_failures_are_recorded_and_fail_the_report(tmp_path: Path) -> None:
    (tmp_path / "matrix.yaml").write_text(json.dumps(TINY))
    raw = tmp_path / "raw"
    env = {**os.environ, "MLXCOMPAT_MATRIX": str(tmp_path / "matrix.yaml"),
           "MLXCOMPAT_RAW": str(raw), "MLXCOMPAT_SKIP_REPORT": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        ["nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(tmp_path / "nox"), "-s", "matrix"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]

    failed = json.loads((raw / "mlx-lm-0.0.999.json").read_text())
    assert failed["install"]["ok"] is False
    assert "0.0.999" in failed["install"]["log_tail"]

    ok = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    assert ok["env"]["packages"]["mlx-lm"] == "0.32.2"
    assert ok["install"]["subjects"]["ghost"]["ok"] is False
    assert ok["install"]["subjects"]["ghost"]["error"].startswith("failed")
    none = {r["mode"] or r["scenario"]: r["verdict"] for r in ok["results"]
            if r["subject"] == "none"}
    assert none["fresh"] == "pass"
    ghost = [r for r in ok["results"] if r["subject"] == "ghost"]
    assert ghost and all(r["verdict"] == "error" for r in ghost), ghost
    assert all("did not install" in r["detail"] for r in ghost), ghost[0]["detail"]

    report = subprocess.run(
        [sys.executable, "-m", "mlxcompat.cli", "--matrix", str(tmp_path / "matrix.yaml"),
         "report", "--raw", str(raw), "--no-html", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    out = report.stdout + report.stderr
    assert report.returncode == 1, out[-3000:]
    assert "mlx-lm-0.0.999" in out and "install" in out, out[-3000:]
    assert " ghost: " in out or "ghost" in out, out[-3000:]
    assert "mlxcompat report: FAILED" in out.splitlines()[-1], out[-3000:]
