"""The throughput gate's scratch matrix: mlx-lm 0.32.2, llama, the gating profile (batch 8,
9 interleaved rounds of 16 tokens), `none` plus the given subjects. Shared by the gate's
integration test and scripts/aa_overhead.py, so the A/A test measures the test's scenario."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONTROLS = Path(__file__).resolve().parents[1] / "negative_controls"
# The slow-decode control (MLXCOMPAT_SLOW_DECODE_S seconds a decode step; 0: a no-op wrapper).
SLOW_DECODE = {"install": [str(CONTROLS)],
               "entry_points": {"slow": "negative_controls.slow_decode:apply"}}


def gate_matrix(subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": 3,
        "settings": {"timeout_s": 600, "bench": {
            "default": "gate", "models": ["llama"],
            "profiles": {"gate": {"batches": [8], "rounds": 9, "warmup": 1, "prompt_tokens": 16,
                                  "gen_tokens": 16, "gating": True}}}},
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}",
                                                              "darwin": "mlx=={v}"}}},
        "roles": {"slow": {"targets": ["mlx_lm.generate"], "checks": ["parity"]}},
        "subjects": {"none": {}, **subjects},
        "checks": ["parity"],
        "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "models": ["llama"]}],
    }
