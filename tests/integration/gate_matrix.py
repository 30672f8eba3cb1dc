"""Scratch matrices of one mlx-lm 0.32.2 cell, `none` plus the given subjects: the throughput
gate's (llama, the gating profile: batch 8, 9 interleaved rounds of 16 tokens) and the A/A
tests'. Shared by the gate's integration test, scripts/aa_overhead.py and
scripts/aa_processes.py, so each A/A test measures the scenario it speaks for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

CONTROLS = Path(__file__).resolve().parents[1] / "negative_controls"
# The slow-decode control (MLXCOMPAT_SLOW_DECODE_S seconds a decode step; 0: a no-op wrapper).
SLOW_DECODE = {"install": [str(CONTROLS)],
               "entry_points": {"slow": "negative_controls.slow_decode:apply"}}
GATE_PROFILE = {"batches": [8], "rounds": 9, "warmup": 1, "prompt_tokens": 16,
                "gen_tokens": 16, "gating": True}


def scratch_matrix(subjects: dict[str, Any], models: list[str], profiles: dict[str, Any],
                   roles: dict[str, Any] | None = None) -> dict[str, Any]:
    """One cell, parity as its only check, the first of `profiles` its default bench."""
    return {
        "schema": 3,
        "settings": {"timeout_s": 600, "bench": {"default": next(iter(profiles)),
                                                 "models": models, "profiles": profiles}},
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}",
                                                              "darwin": "mlx=={v}"}}},
        **({"roles": roles} if roles else {}),
        "subjects": {"none": {}, **subjects},
        "checks": ["parity"],
        "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "models": models}],
    }


def gate_matrix(subjects: dict[str, Any]) -> dict[str, Any]:
    return scratch_matrix(subjects, ["llama"], {"gate": GATE_PROFILE},
                          roles={"slow": {"targets": ["mlx_lm.generate"], "checks": ["parity"]}})
