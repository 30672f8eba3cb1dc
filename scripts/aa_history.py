"""Does what a subject's process did before its timed rounds move them? An A/A across
process histories, on the idle sweep's setting (bench only: `--checks=install,import`).

In bench-only sweeps `mlxcompat` timed llama's prefill 2.7-3.6% below `none`, though its
patch leaves llama alone (reports/evidence/mlxcompat-llama-prefill). Subjects here, on mlx-lm
0.32.2, the quick profile, llama and mamba2 (both passed through by the patch there):

- `marker`: sets one attribute on mlx_lm.generate and nothing else (a twin that is timed:
  a subject whose entry points change nothing is not);
- `probe`: the same, after running mlxcompat's capability probe (`ssm_probe.padding_leaks`,
  tiny SSM models through BatchGenerator) in its process;
- AA_VARIANTS (comma-separated, environment): `probe-gc`, `probe-clear` (the probe, then
  gc.collect, and mx.clear_cache), `probe-nocompile` (the probe with mx.compile off),
  `imports` (only the probe's model modules imported);
- `mlxcompat`: the real patch.

    python3 scripts/aa_history.py [trials] [--out FOLDER]    # or --read FOLDER

If `probe` moves like `mlxcompat` and `marker` does not, the figure is the probe's leftovers
in the process, not the patch's code on the prefill path.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from aa_overhead import bench_only_main  # noqa: E402
from gate_matrix import scratch_matrix  # noqa: E402

MODELS = ["llama", "mamba2"]
VARIANTS = [v for v in os.environ.get("AA_VARIANTS", "").split(",") if v]


ROLE = {"aa": {"targets": ["mlx_lm.generate"], "checks": ["parity"]}}


def subjects(install: list[str] | None) -> dict:
    """marker, probe and AA_VARIANTS, entry points in scripts/aa_subjects.py (installed from
    `install`, or found on the path where it is None), and mlxcompat's real patch."""
    mine = {"install": install} if install else {}
    return {**{name: {**mine, "entry_points": {"aa": f"aa_subjects:{name.replace('-', '_')}"}}
               for name in ["marker", "probe", *VARIANTS]},
            "mlxcompat": {"entry_points": {"mamba": "mlxcompat.patches.mamba_cache:"
                                                    "ensure_mamba_support"}}}


def matrix(package: Path) -> dict:
    quick = yaml.safe_load((ROOT / "matrix.yaml").read_text())["settings"]["bench"]["profiles"]
    return scratch_matrix(subjects([str(package)]), MODELS,
                          {"quick": {**quick["quick"], "models": MODELS}}, roles=ROLE)


def _build(work: Path) -> dict:
    (work / "pkg").mkdir()
    (work / "pkg" / "aa_subjects.py").write_text((ROOT / "scripts" / "aa_subjects.py").read_text())
    return matrix(work / "pkg")


def _read(folder: Path) -> list[str]:
    from bench_spread import by_subject, rows  # the harness (pydantic): not for aa_matrix.py

    lines = []
    for backend, measured in rows(folder).items():
        lines += [f"{backend}: {len(measured)} rows", *by_subject(measured)]
    return lines


def main() -> int:
    return bench_only_main(ROOT / "reports" / "evidence" / "aa-history", 8, _build, _read)


if __name__ == "__main__":
    sys.exit(main())
