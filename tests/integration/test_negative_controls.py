"""Negative controls: deliberately broken subjects, run for real on one mlx-lm and one mlx-vlm
cell beside a correct subject. The report must fail, naming every broken subject, while the
correct subject stays green. Needs nox, uv and PyPI (as `.ci/run` provides)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONTROLS = ROOT / "tests" / "negative_controls"
OURS = {"mamba": "mlxcompat.patches.mamba_cache:ensure_mamba_support",
        "glm4v": "mlxcompat.patches.glm4v_moe:ensure_glm4v_support"}
BROKEN = {
    "drops-row": {"negative": "negative_controls.drop_row:apply"},
    "noisy-merge": {"negative": "negative_controls.noisy_merge:apply"},
    "claims-applied": {"mamba": "negative_controls.claims:apply"},
    "missing-module": {"negative": "negative_controls.not_there:apply"},
    "bad-extend": {"negative": "negative_controls.glm4v_extend:apply"},
    "reseeds": {"negative": "negative_controls.reseed:apply"},  # process-state
    "short-trim": {"negative": "negative_controls.short_trim:apply"},  # server, prompt-cache
    "upcasts-merge": {"negative": "negative_controls.upcast_merge:apply"},  # dtype-cache
    "lossy-state": {"negative": "negative_controls.lossy_state:apply"},  # prompt-cache
    "wide-filter": {"negative": "negative_controls.wide_filter:apply"},  # shapes
    "wider-patch": {"mamba": "negative_controls.wide_patch:apply"},  # patch-status: wider
    "drops-rope-deltas": {"negative": "negative_controls.drop_rope_deltas:apply"},  # glm4v image
    # outside every role's targets: must not borrow none's rows (mlx-lm cell only)
    "hides-patch": {"negative": "negative_controls.hidden_patch:apply"},
}
BEHAVIOUR = ("parity", "server", "prompt-cache", "shapes", "dtype-cache", "cache-contract")
LM_ONLY = {"none": {}, "only-logs": {"install": [str(CONTROLS)], "entry_points": {
    "negative": "negative_controls.only_logs:apply"}}}


def _matrix() -> str:
    subjects = {"mlxcompat": {"entry_points": OURS}}
    for name, eps in BROKEN.items():
        points = {**OURS, **eps} if "mamba" not in eps else {"glm4v": OURS["glm4v"], **eps}
        if name == "hides-patch":
            points = eps
        subjects[name] = {"install": [str(CONTROLS)], "entry_points": points}
    subjects |= LM_ONLY
    vlm = [s for s in subjects if s not in (*LM_ONLY, "hides-patch")]
    return json.dumps({
        "schema": 3,
        "settings": {"bench": {"default": "off"}, "timeout_s": 900},
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}",
                                                              "darwin": "mlx=={v}"}}},
        "roles": {"negative": {"targets": ["mlx_lm.models.cache", "mlx_vlm.models.cache",
                                           "mlx_vlm.models.glm4v_moe.language"],
                               "checks": ["parity", "glm4v"]}},
        "subjects": subjects,
        "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "models": ["llama", "mamba2"],
                   "extra_checks": ["server", "prompt-cache", "shapes", "dtype-cache"]},
                  {"mlx-vlm": "0.7.10", "mlx-lm": "0.32.2", "mlx": "0.32.4",
                   "models": ["llama", "glm4v_moe"], "subjects": vlm}],
    })


@pytest.mark.skipif(shutil.which("nox") is None or shutil.which("uv") is None,
                    reason="nox and uv are not on PATH")
def test_every_broken_subject_is_named_and_the_correct_one_stays_green(tmp_path: Path) -> None:
    (tmp_path / "matrix.yaml").write_text(_matrix())
    raw = tmp_path / "reports" / "raw"
    env = {**os.environ, "MLXCOMPAT_MATRIX": str(tmp_path / "matrix.yaml"),
           "MLXCOMPAT_RAW": str(raw), "HF_HUB_OFFLINE": "1"}
    start = time.perf_counter()
    proc = subprocess.run(
        ["nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(tmp_path / "nox"),
         "-s", "matrix", "report"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500, check=False)
    took = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    print(f"negative-control run: {took:.0f}s")
    assert proc.returncode != 0, out[-3000:]
    assert "mlxcompat report: FAILED" in out, out[-3000:]
    report = json.loads((tmp_path / "reports" / "compat.json").read_text())
    unexpected = [r for r in report["results"] if not r["outcome"]["expected"]]
    named = {r["subject"] for r in unexpected}
    assert named == set(BROKEN), f"named {sorted(named)}; rows: " + "; ".join(
        f"{r['cell']} {r['check']} {r['mode'] or r['scenario']} {r['subject']}"
        for r in unexpected[:20])
    for subject in BROKEN:
        assert f" {subject}: " in out, f"the report's lines do not name {subject}"
    ours = [r for r in report["results"] if r["subject"] == "mlxcompat"]
    assert ours and all(r["verdict"] == "pass" for r in ours), [
        (r["cell"], r["check"], r["mode"], r["detail"]) for r in ours if r["verdict"] != "pass"]
    # A subject that changed nothing takes none's behaviour rows, named; one that hid its
    # change outside its role's targets ran its own.
    logs = [r for r in report["results"] if r["subject"] == "only-logs"]
    none = {(r["check"], r["model"], r["mode"], r["scenario"], r["dtype"])
            for r in report["results"] if r["subject"] == "none" and r["check"] != "install"}
    borrowed = {(r["check"], r["model"], r["mode"], r["scenario"], r["dtype"])
                for r in logs if r["borrowed_from"] == "none"}
    assert {k[0] for k in borrowed} == set(BEHAVIOUR) and borrowed == none, borrowed ^ none
    assert not any(r["borrowed_from"] for r in report["results"]
                   if r["subject"] == "hides-patch")
