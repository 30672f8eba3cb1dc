"""An A/A test of the paired overhead: `none` against `twin`, a subject with no patch at all
(a second, identical process), and against `noop`, the slow-decode control with its sleep set
to 0 (one Python wrapper around BatchGenerator.next). Neither can cost anything real, so every
"significant" overhead they get is the method's (or the machine's) false positive rate.

    python3 scripts/aa_overhead.py [trials] [--out FOLDER]

Each trial is one `nox -s "matrix(mlx-lm-0.32.2)"` run of the gate profile (llama, batch 8,
9 interleaved rounds) in a scratch matrix; the cell JSON of every trial is kept under FOLDER.
Needs nox, uv and PyPI (as `.ci/run` provides). Nothing else may run meanwhile.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from gate_matrix import SLOW_DECODE, gate_matrix  # noqa: E402  (the gate test's scenario)

MATRIX = gate_matrix({"twin": {}, "noop": SLOW_DECODE})


def trial(work: Path, keep: Path, i: int, env: dict[str, str] | None = None,
          nox_args: tuple[str, ...] = ()) -> dict:
    """One `nox -s matrix` run of the scratch matrix in `work` (fresh processes); its cell
    JSON is kept as `keep`/trial-NN.json and returned."""
    env = {**os.environ, "MLXCOMPAT_MATRIX": str(work / "matrix.yaml"),
           "MLXCOMPAT_RAW": str(work / "raw"), "HF_HUB_OFFLINE": "1",
           "MLXCOMPAT_SKIP_REPORT": "1", **(env or {})}
    subprocess.run(["nox", "-f", str(ROOT / "noxfile.py"), "--envdir", str(work / "nox"),
                    "-s", "matrix", *(["--", *nox_args] if nox_args else [])], cwd=ROOT,
                   env=env, check=True, capture_output=True)
    cell = work / "raw" / "mlx-lm-0.32.2.json"
    shutil.copy(cell, keep / f"trial-{i:02d}.json")
    return json.loads(cell.read_text())


def bench_only_main(default_out: Path, default_trials: int,
                    build: Callable[[Path], dict], read: Callable[[Path], list[str]]) -> int:
    """The command line of the bench-only A/A scripts: `[trials] [--out F]` runs that many
    trials of the scratch matrix `build(work)` returns (bench only: `--checks=install,import`)
    and keeps them in F; `--read F` only reads kept ones. Prints `read(folder)`."""
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", nargs="?", type=int, default=default_trials)
    parser.add_argument("--out", type=Path, default=default_out)
    parser.add_argument("--read", type=Path, help="only read the trials kept in this folder")
    args = parser.parse_args()
    if args.read is None:
        args.out.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix="mlxcompat-aa-"))
        try:
            (work / "matrix.yaml").write_text(json.dumps(build(work)))
            for i in range(args.trials):
                trial(work, args.out, i, nox_args=("--checks=install,import",))
                print(f"trial {i} done", flush=True)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    print("\n".join(read(args.read or args.out)))
    return 0


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("trials", nargs="?", type=int, default=6)
    parser.add_argument("--out", type=Path, default=ROOT / "reports" / "evidence" / "aa-overhead")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="mlxcompat-aa-"))
    (work / "matrix.yaml").write_text(json.dumps(MATRIX))
    flagged = {"twin": 0, "noop": 0}
    for i in range(args.trials):
        doc = trial(work, args.out, i, {"MLXCOMPAT_SLOW_DECODE_S": "0"})
        for row in (b for b in doc["bench"] if b.get("overhead")):
            o = row["overhead"]
            flagged[row["subject"]] += bool(o["significant"])
            print(f"trial {i}: {row['subject']:>4} vs none {o['ratio']:.3f} "
                  f"(95% CI {o['ci95'][0]:.3f}-{o['ci95'][1]:.3f}) "
                  f"{'significant' if o['significant'] else 'n.s.'}; its spread "
                  f"{row['gen_tok_s']['spread']:.1%}", flush=True)
    print(f"{args.trials} trials: significant twin {flagged['twin']}, noop {flagged['noop']} "
          f"(a sound 95% interval: about 1 in 20)")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
