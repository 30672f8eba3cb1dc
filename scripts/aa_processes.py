"""An A/A test of the paired overhead across processes, on the matrix's own quick profile.

`none` against three twins (subjects with no patch at all: identical processes) on mlx-lm
0.32.2, the quick profile of matrix.yaml (batch 8, mixed prompt lengths, its rounds), models
llama, mamba2 and qwen3_5. No twin can cost or gain anything, so every "significant" decode or
prefill ratio is the method's false positive, and the spread of the twins' median ratios is how
far one process runs from another of the same code: variation a row's interval, made of one
process's rounds, cannot see.

    python3 scripts/aa_processes.py [trials] [--out FOLDER]

Each trial is one `nox -s "matrix(mlx-lm-0.32.2)"` run in a scratch matrix (fresh processes);
its cell JSON is kept under FOLDER. Nothing else may run meanwhile. Read the kept trials again
with `--read FOLDER`.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
TWINS = ("twin-1", "twin-2", "twin-3")
MODELS = ["llama", "mamba2", "qwen3_5"]


def scratch_matrix() -> dict:
    quick = yaml.safe_load((ROOT / "matrix.yaml").read_text())["settings"]["bench"]["profiles"]
    profile = {**quick["quick"], "models": MODELS}
    return {
        "schema": 3,
        "settings": {"timeout_s": 600, "bench": {"default": "quick", "models": MODELS,
                                                 "profiles": {"quick": profile}}},
        "backends": {"cpu": {"device": "cpu", "requirement": {"linux": "mlx[cpu]=={v}",
                                                              "darwin": "mlx=={v}"}}},
        "subjects": {"none": {}, **{t: {} for t in TWINS}},
        "checks": ["parity"],
        "cells": [{"mlx-lm": "0.32.2", "mlx": "0.32.2", "models": MODELS}],
    }


def trial(work: Path, keep: Path, i: int) -> None:
    env = {**os.environ, "MLXCOMPAT_MATRIX": str(work / "matrix.yaml"),
           "MLXCOMPAT_RAW": str(work / "raw"), "HF_HUB_OFFLINE": "1",
           "MLXCOMPAT_SKIP_REPORT": "1"}
    subprocess.run(["nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(work / "nox"),
                    "-s", "matrix", "--", "--checks=install,import"], cwd=ROOT, env=env,
                   check=True, capture_output=True)
    shutil.copy(work / "raw" / "mlx-lm-0.32.2.json", keep / f"trial-{i:02d}.json")


def read(folder: Path) -> list[str]:
    """Every twin's ratios, the share significant, and the spread of its median ratios."""
    lines, logs, flagged, total = [], {"decode": [], "prefill": []}, {"decode": 0, "prefill": 0}, 0
    for path in sorted(folder.glob("trial-*.json")):
        for row in json.loads(path.read_text())["bench"]:
            if row.get("subject") not in TWINS or not row.get("overhead"):
                continue
            total += 1
            for phase, key in (("decode", "overhead"), ("prefill", "prefill_overhead")):
                o = row[key]
                flagged[phase] += bool(o["significant"])
                logs[phase].append(math.log(o["ratio"]))
                lines.append(f"{path.stem} {row['subject']} {row['model']:<8} {phase:<7} "
                             f"{o['text']}")
    for phase, values in logs.items():
        if not values:
            continue
        ranked = sorted(abs(v) for v in values)
        q95 = ranked[min(len(ranked) - 1, math.ceil(0.95 * len(ranked)) - 1)]
        sd = math.sqrt(sum(v * v for v in values) / len(values))
        lines.append(f"{phase}: {flagged[phase]}/{total} twin intervals exclude 1 "
                     f"(a sound 95% interval: about 1 in 20); twin/none median ratios: "
                     f"RMS {math.expm1(sd):.1%}, 95th percentile of |change| "
                     f"{math.expm1(q95):.1%}, largest {math.expm1(ranked[-1]):.1%}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", nargs="?", type=int, default=4)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "evidence" / "aa-processes")
    parser.add_argument("--read", type=Path, help="only read the trials kept in this folder")
    args = parser.parse_args()
    if args.read is None:
        args.out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="mlxcompat-aa-"))
        (work / "matrix.yaml").write_text(json.dumps(scratch_matrix()))
        try:
            for i in range(args.trials):
                trial(work, args.out, i)
                print(f"trial {i} done", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(read(args.read or args.out)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
