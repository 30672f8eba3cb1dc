"""The real nox matrix machinery on a tiny matrix: an install failure does not stop the next
cell. Needs nox and uv on PATH and PyPI (as `.ci/run` provides)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

TINY = """
schema: 1
backends: {cpu: {device: cpu, requirement: {linux: "mlx[cpu]=={v}", darwin: "mlx=={v}"}}}
subjects:
  none: {}
cells:
  - {mlx-lm: "0.0.999", mlx: "0.32.2", models: [llama]}
  - {mlx-lm: "0.32.2", mlx: "0.32.2", models: [llama], subjects: [none]}
"""


@pytest.mark.skipif(shutil.which("nox") is None, reason="nox is not on PATH")
def test_failed_install_is_recorded_and_the_next_cell_runs(tmp_path: Path) -> None:
    (tmp_path / "matrix.yaml").write_text(TINY)
    raw = tmp_path / "raw"
    env = {**os.environ, "MLXCOMPAT_MATRIX": str(tmp_path / "matrix.yaml"),
           "MLXCOMPAT_RAW": str(raw), "MLXCOMPAT_SKIP_REPORT": "1"}
    proc = subprocess.run(
        ["nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(tmp_path / "nox"), "-s", "matrix",
         "--", "--bench=off"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    failed = json.loads((raw / "mlx-lm-0.0.999.json").read_text())
    assert failed["install"]["status"] == "failed"
    assert "0.0.999" in failed["install"]["log_tail"]
    assert failed["results"] == []
    ok = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    assert ok["install"]["status"] == "ok"
    verdicts = {(r["check"], r["mode"]): r["verdict"] for r in ok["results"]}
    assert verdicts[("parity", "fresh")] == "pass"
    assert ok["env"]["packages"]["mlx-lm"] == "0.32.2"
    report = subprocess.run(
        [sys.executable, "-m", "mlxcompat.cli", "--matrix", str(tmp_path / "matrix.yaml"),
         "report", "--raw", str(raw), "--no-html"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False,
    )
    lines = report.stdout.splitlines()
    assert any("mlx-lm-0.0.999" in line and "install failed" in line for line in lines)
    assert report.returncode == 1, "an install failure nobody expected must fail the report"
    assert lines[-1] == "mlxcompat report: FAILED: 1 unexpected outcome(s)"
