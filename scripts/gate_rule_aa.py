"""How often the throughput gate flags absolute tok/s between runs where nothing changed, and
how often it catches a slowdown put in by hand, read off scripts/aa_overhead.py's trials.

Every ordered pair of trials of one subject (none, twin, noop: nothing differs between runs)
is judged the way report/baseline.py judges a row against its baseline: ungated where the
machine's own speed moved (the calibration loop's median beyond the threshold), otherwise
flagged by the old rule (significant, median beyond the threshold) or by the gate's rule
(`beyond`: the whole 95% interval beyond it). Then the same pairs with the newer run's rounds
scaled down (a real slowdown of that size): the share each rule catches.

    python3 scripts/gate_rule_aa.py [FOLDER ...]   # default: reports/evidence/aa-overhead*
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from mlxcompat.bench import unpaired_change  # noqa: E402
from mlxcompat.records.bench import MeasuredBench  # noqa: E402
from mlxcompat.records.cell import read_cell  # noqa: E402
from mlxcompat.report.baseline import beyond  # noqa: E402

THRESHOLD = 0.20
SLOWDOWNS = (1.0, 0.75, 0.7, 0.6, 0.5)


def _runs(folder: Path) -> dict[str, list[MeasuredBench]]:
    by: dict[str, list[MeasuredBench]] = {}
    for path in sorted(folder.glob("trial-*.json")):
        for row in read_cell(path).bench:
            if isinstance(row, MeasuredBench) and row.gen_tok_s.values:
                by.setdefault(row.subject, []).append(row)
    return by


def _loop(row: MeasuredBench) -> float | None:
    seconds = row.calibration.seconds if row.calibration else None
    return seconds.median if seconds else None


def judge(folder: Path) -> None:
    pairs = [(now, then) for runs in _runs(folder).values()
             for now, then in itertools.permutations(runs, 2)]
    print(f"{folder.relative_to(ROOT) if folder.is_relative_to(ROOT) else folder}: "
          f"{len(pairs)} ordered pairs of trials")
    for scale in SLOWDOWNS:
        judged = old = new = ungated = 0
        for now, then in pairs:
            ln, lt = _loop(now), _loop(then)
            if ln and lt and abs(ln / lt - 1) > THRESHOLD:
                ungated += 1
                continue
            change = unpaired_change([v * scale for v in now.gen_tok_s.values],
                                     then.gen_tok_s.values)
            if change is None:
                continue
            judged += 1
            old += change[2] and abs(change[0] - 1) > THRESHOLD
            new += beyond(change, THRESHOLD)
        what = "nothing changed: flagged" if scale == 1.0 else f"{scale - 1:+.0%} put in: caught"
        print(f"  {what:>28}  old rule {old}/{judged} ({old / max(judged, 1):.0%})  "
              f"beyond {new}/{judged} ({new / max(judged, 1):.0%})  "
              f"[{ungated} ungated: loop moved]")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("folders", nargs="*", type=Path)
    args = parser.parse_args()
    folders = args.folders or sorted((ROOT / "reports" / "evidence").glob("aa-overhead*"))
    for folder in folders:
        judge(folder.resolve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
