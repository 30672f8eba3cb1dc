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

import json
import math
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from aa_overhead import bench_only_main  # noqa: E402  (one way to run scratch trials)
from bench_spread import excluding_one  # noqa: E402  (the count the matrix's rows get)
from gate_matrix import scratch_matrix  # noqa: E402

from mlxcompat.records.bench import PairedRatio  # noqa: E402

TWINS = ("twin-1", "twin-2", "twin-3")
MODELS = ["llama", "mamba2", "qwen3_5"]


def matrix() -> dict:
    """The scratch cell: matrix.yaml's own quick profile on three models, `none` and twins."""
    quick = yaml.safe_load((ROOT / "matrix.yaml").read_text())["settings"]["bench"]["profiles"]
    return scratch_matrix({t: {} for t in TWINS}, MODELS,
                          {"quick": {**quick["quick"], "models": MODELS}})


def _paired(found: dict) -> PairedRatio:
    """A kept trial's overhead as the record; the committed trials were made at 4cba03b plus
    a trial field, `floor`, that the record no longer has (any other unknown key fails)."""
    return PairedRatio.from_json({k: v for k, v in found.items() if k != "floor"})


def read(folder: Path) -> list[str]:
    """Every twin's ratios, the share significant, and the spread of its median ratios."""
    lines: list[str] = []
    paired: dict[str, list[PairedRatio]] = {"decode": [], "prefill": []}
    for path in sorted(folder.glob("trial-*.json")):
        for row in json.loads(path.read_text())["bench"]:
            row = row.get("measured", row)
            if row.get("subject") not in TWINS:
                continue
            for phase, key in (("decode", "overhead"), ("prefill", "prefill_overhead")):
                if row.get(key):
                    o = _paired(row[key])
                    paired[phase].append(o)
                    lines.append(f"{path.stem} {row['subject']} {row['model']:<8} {phase:<7} "
                                 f"{o.text}")
    for phase, ratios in paired.items():
        if not ratios:
            continue
        logs = [math.log(o.ratio) for o in ratios]
        ranked = sorted(abs(v) for v in logs)
        q95 = ranked[min(len(ranked) - 1, math.ceil(0.95 * len(ranked)) - 1)]
        sd = math.sqrt(sum(v * v for v in logs) / len(logs))
        lines.append(f"{phase}: {sum(excluding_one(ratios))}/{len(ratios)} twin intervals "
                     f"exclude 1 (a sound 95% interval: about 1 in 20); twin/none median "
                     f"ratios: RMS {math.expm1(sd):.1%}, 95th percentile of |change| "
                     f"{math.expm1(q95):.1%}, largest {math.expm1(ranked[-1]):.1%}")
    return lines


def main() -> int:
    return bench_only_main(ROOT / "reports" / "evidence" / "aa-processes", 4,
                           lambda work: matrix(), read)


if __name__ == "__main__":
    sys.exit(main())
