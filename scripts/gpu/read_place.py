"""Read a `probe_place.py` log: per policy, how many rows held their spread, the loop's
level, where the slow rounds came from, and each case's tok/s against `free`.

Needs only numpy and mlxcompat (no mlx), so a committed log reads anywhere:

    PYTHONPATH=src python scripts/gpu/read_place.py reports/evidence/gpu/probe-place-….jsonl
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from mlxcompat.bench import summarise
from mlxcompat.placement import POLICIES, SLOW


def report(kept: list[dict]) -> list[str]:
    """The probe's summary of its rounds (each a dict of `probe_place.one_round`, tagged with
    block, policy, model and batch)."""
    rows: dict[tuple, list[dict]] = defaultdict(list)
    for g in kept:
        rows[(g["policy"], g["block"], g["model"], g["batch"])].append(g)
    fastest = min(g["loop_ms"] for g in kept)
    lines = [f"fastest loop {fastest:.2f} ms; a round is slow past {SLOW}x that"]
    for policy in POLICIES:
        mine = [g for g in kept if g["policy"] == policy]
        spreads = [summarise([g["tok_s"] for g in got]).spread or 0.0
                   for key, got in rows.items() if key[0] == policy]
        moves = sum(got[-1]["moves"] - got[0]["moves"] for key, got in rows.items()
                    if key[0] == policy)
        slow = [g for g in mine if g["loop_ms"] > SLOW * fastest]
        after = [g for g in mine if g["after_ms"] > SLOW * fastest]
        loops = np.percentile([g["loop_ms"] for g in mine], [5, 50, 95])
        lines.append(f"{policy:<6} rows spread <= 5%: {sum(s <= 0.05 for s in spreads)}/"
                     f"{len(spreads)}; loop ms p5/p50/p95 {loops[0]:.1f}/{loops[1]:.1f}/"
                     f"{loops[2]:.1f}; slow before {len(slow)}, after {len(after)} of "
                     f"{len(mine)} rounds; moves {moves}")
        for label, part in (("slow", slow), ("fast", [g for g in mine if g not in slow])):
            if part:
                lines.append(
                    f"   {label} rounds: run-queue wait median "
                    f"{np.median([g['wait'] for g in part]):.1%}, main ran "
                    f"{np.median([g['ran'] for g in part]):.0%} of the round, shared a CPU "
                    f"{sum(g['shared'] for g in part)}/{len(part)}, steal max "
                    f"{max(g['steal'] for g in part):.1%}")
    lines.append("median tok/s per case (all blocks), against free:")
    for model, batch in sorted({(g["model"], g["batch"]) for g in kept}):
        medians = {p: float(np.median([g["tok_s"] for g in kept if g["policy"] == p
                                       and (g["model"], g["batch"]) == (model, batch)]))
                   for p in POLICIES}
        lines.append(f"   {model:<6} b{batch:<3} " + "  ".join(
            f"{p} {medians[p]:7.0f} ({medians[p] / medians['free']:.2f}x)" for p in POLICIES))
    return lines


def main() -> int:
    kept = [json.loads(line) for line in Path(sys.argv[1]).read_text().splitlines() if line]
    print("\n".join(report(kept)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
