"""Issue 23's GPU table: `none`'s decode tok/s and spread (robust CV) pinned to one CPU against
the committed policy (no pin), for llama and mamba2 at batch 1 / 8 / 32, float32 and bfloat16.

    python3 scripts/gpu/pin_table.py            # the committed files named below
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "src"))

from mlxcompat.records.bench import MeasuredBench
from mlxcompat.records.cell import read_cell

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "reports/evidence/gpu/mlx-lm-0.32.2@cuda-pinned.json"
UNPINNED = ROOT / "reports/raw/mlx-lm-0.32.2@cuda.json"


def _rows(path: Path) -> dict[tuple[str, int, str], MeasuredBench]:
    doc = read_cell(path)
    return {(r.model, r.batch, r.dtype): r for r in doc.bench
            if isinstance(r, MeasuredBench) and r.subject == "none"}


def main() -> int:
    pinned, free = _rows(PINNED), _rows(UNPINNED)
    print(f"pinned: {PINNED.relative_to(ROOT)} · no pin: {UNPINNED.relative_to(ROOT)}")
    print(f"{'model':7} {'batch':>5} {'dtype':9} {'pinned tok/s':>12} {'CV':>6} "
          f"{'no pin tok/s':>12} {'CV':>6} {'ratio':>6}")
    for key in sorted(pinned, key=lambda k: (k[0], k[1], k[2] != "float32")):
        p, f = pinned[key], free.get(key)
        if f is None:
            continue
        pm, fm = p.gen_tok_s.median or 0, f.gen_tok_s.median or 0
        print(f"{key[0]:7} {key[1]:>5} {key[2]:9} {pm:12.0f} {p.gen_tok_s.spread or 0:6.1%} "
              f"{fm:12.0f} {f.gen_tok_s.spread or 0:6.1%} {fm / pm if pm else 0:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
