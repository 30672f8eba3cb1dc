"""How tight the committed throughput rows are: the figures issue 23's acceptance asks for.

For each folder of cell JSONs (default reports/raw), per backend: measured rows, the share
with spread (robust CV, bench.summarise) <= 5%, the share whose overhead against `none` has a
95% half-width <= 5 points, and the rows the calibration loop marked noisy — over all rows and
over the rows not marked noisy, and by the spread of the calibration loop during the rows.

    python3 scripts/bench_spread.py                         # the committed matrix
    python3 scripts/bench_spread.py reports/evidence/spread-hog   # measured beside a CPU hog
    python3 scripts/bench_spread.py reports/raw/mlx-lm-0.32.2@cuda.json   # one cell file
    python3 scripts/bench_spread.py --profile quick     # the matrix run's own rows only
    python3 scripts/bench_spread.py --foreign           # what other work took of the bench CPU
    python3 scripts/bench_spread.py --by-subject        # each subject's overheads, per model
    python3 scripts/bench_spread.py B.json --ratio-to A.json   # none's decode tok/s, B over A
    python3 scripts/bench_spread.py --by-host A.json B/ ...   # each run's host, then all pooled

Each backend also gets how many decode and prefill overheads claim a difference, and which way.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mlxcompat.bench import summarise
from mlxcompat.records.bench import MeasuredBench, PairedRatio
from mlxcompat.records.cell import read_cell

LIMIT = 0.05
MACHINE_LIMITS = (0.05, 0.10)


def _share(flags: list[bool]) -> str:
    return f"{sum(flags)}/{len(flags)} ({sum(flags) / len(flags):.0%})" if flags else "-"


def rows(folder: Path, profile: str = "") -> dict[str, list[MeasuredBench]]:
    """Measured rows by backend, of every cell JSON in `folder` (or of the one file it is),
    of one bench profile where `profile` names it."""
    found: dict[str, list[MeasuredBench]] = defaultdict(list)
    for path in ([folder] if folder.is_file() else sorted(folder.glob("*.json"))):
        if ".upstream." in path.name or path.name.endswith(".bench.json"):
            continue
        doc = read_cell(path)
        for row in doc.bench:
            if isinstance(row, MeasuredBench) and profile in ("", row.profile):
                found[row.backend or doc.env.backend or "?"].append(row)
    return found


def report(folder: Path, profile: str = "", foreign: bool = False,
           subjects: bool = False) -> list[str]:
    lines = [f"{folder}{f' (profile {profile})' if profile else ''}:"]
    for backend, measured in sorted(rows(folder, profile).items()):
        for name, subset in (("all", measured),
                             ("not noisy", [r for r in measured
                                            if not (r.calibration and r.calibration.noisy)])):
            spread = [(r.gen_tok_s.spread or 0) <= LIMIT for r in subset]
            halves = [(r.overhead.ci95[1] - r.overhead.ci95[0]) / 2 <= LIMIT
                      for r in subset if r.overhead and len(r.overhead.ci95) == 2]
            noisy = sum(1 for r in subset if r.calibration and r.calibration.noisy)
            lines.append(f"  {backend:<5} {name:<9}: {len(subset)} rows; spread <= 5%: "
                         f"{_share(spread)}; overhead half-width <= 5%: {_share(halves)}; "
                         f"noisy: {noisy}")
        lines.append(_excluding_one(backend, measured))
        lines += _by_machine(backend, measured)
        if foreign:
            lines.append(_foreign(backend, measured))
        if subjects:
            lines += by_subject(measured)
    return lines


def excluding_one(paired: list[PairedRatio]) -> tuple[int, int]:
    """How many of these paired overheads claim a difference: (slower, faster)."""
    return (sum(1 for o in paired if o.significant and o.ratio < 1),
            sum(1 for o in paired if o.significant and o.ratio > 1))


def _excluding_one(backend: str, measured: list[MeasuredBench]) -> str:
    """How many decode and prefill overheads against `none` claim a difference, and which way
    (an A/A on this machine: about 7%, reports/evidence/aa-processes/README.txt)."""
    parts = []
    for phase in ("overhead", "prefill_overhead"):
        paired = [o for r in measured if (o := getattr(r, phase)) is not None]
        slower, faster = excluding_one(paired)
        parts.append(f"{'decode' if phase == 'overhead' else 'prefill'} "
                     f"{slower + faster}/{len(paired)} (slower {slower}, faster {faster})")
    return f"  {backend:<5} intervals excluding 1: " + "; ".join(parts)


def by_subject(measured: list[MeasuredBench]) -> list[str]:
    """Per subject and model: rows paired with `none`, the median decode and prefill change
    and how many of them claim a difference. A subject whose patch fails to apply is an A/A
    twin of `none`; a patch that costs something shows here first."""
    found: dict[tuple[str, str], list[MeasuredBench]] = defaultdict(list)
    for r in measured:
        if r.overhead is not None:
            found[(r.subject, r.model)].append(r)
    lines = []
    for (subject, model), group in sorted(found.items()):
        parts = []
        for phase in ("overhead", "prefill_overhead"):
            paired = [o for r in group if (o := getattr(r, phase)) is not None]
            if paired:
                middle = statistics.median(o.ratio for o in paired) - 1
                parts.append(f"{'decode' if phase == 'overhead' else 'prefill'} "
                             f"{middle:+.1%} ({sum(excluding_one(paired))} exclude 1)")
        lines.append(f"    {subject:<22} {model:<9} {len(group):>2} rows: " + "; ".join(parts))
    return lines


def _foreign(backend: str, measured: list[MeasuredBench]) -> str:
    """The share of the bench CPU that other processes and the hypervisor took during a
    row's rounds (cpuwatch), over the rows: the median and the 90th percentile."""
    shares = sorted(r.calibration.foreign for r in measured if r.calibration)
    if not shares:
        return f"  {backend:<5} no calibration records"
    return (f"  {backend:<5} other work on the bench CPU: median {statistics.median(shares):.2%}, "
            f"90th percentile {shares[int(0.9 * (len(shares) - 1))]:.2%} of {len(shares)} rows")


def _by_machine(backend: str, measured: list[MeasuredBench]) -> list[str]:
    """The rows again, by how steady the machine itself was during them: the spread of the
    calibration loop timed before each round (a CPU loop; on a VM it also sees the host's
    contention, which /proc/stat's shares do not)."""
    timed = [r for r in measured if r.calibration and r.calibration.seconds]
    lines = []
    for limit in MACHINE_LIMITS:
        quiet = [r for r in timed if (r.calibration.seconds.spread or 0) <= limit]
        spread = [(r.gen_tok_s.spread or 0) <= LIMIT for r in quiet]
        lines.append(f"  {backend:<5} loop spread <= {limit:.0%}: {len(quiet)}/{len(timed)} rows; "
                     f"their spread <= 5%: {_share(spread)}")
    corr = [_rank_corr([1 / s for s in r.calibration.seconds.values], r.gen_tok_s.values)
            for r in timed if len(r.calibration.seconds.values) == len(r.gen_tok_s.values) >= 4]
    corr = [c for c in corr if c == c]
    if corr:
        lines.append(f"  {backend:<5} rank correlation of a round's tok/s with the loop's speed "
                     f"before it: median {statistics.median(corr):+.2f} over {len(corr)} rows")
    adjusted = [(summarise([g * s for g, s in zip(r.gen_tok_s.values,
                                                  r.calibration.seconds.values, strict=True)]
                           ).spread or 0.0) <= LIMIT for r in timed
                if len(r.calibration.seconds.values) == len(r.gen_tok_s.values) >= 4]
    if adjusted:
        lines.append(f"  {backend:<5} tok/s divided by the loop's speed: spread <= 5% on "
                     f"{_share(adjusted)} (a correction the harness does not make)")
    return lines


HOST_BUCKETS = (0.02, 0.05, 0.10, 0.15)


def by_host(folders: list[Path]) -> list[str]:
    """How the host behaved in each run (the hypervisor's median share, the calibration loop's
    median spread) beside the run's spread, then every run's rows pooled by their loop's
    spread: whether a row can be tight at all depends on the core under it."""
    lines, pooled = [], []
    for folder in folders:
        measured = [r for rs in rows(folder).values() for r in rs]
        timed = [r for r in measured if r.calibration and r.calibration.seconds]
        steal = [r.calibration.steal for r in timed if r.calibration.steal is not None]
        loop = [r.calibration.seconds.spread or 0 for r in timed]
        lines.append(f"{folder}: steal median "
                     f"{f'{statistics.median(steal):.1%}' if steal else '-'}, loop spread median "
                     f"{f'{statistics.median(loop):.1%}' if loop else '-'}, spread <= 5%: "
                     f"{_share([(r.gen_tok_s.spread or 0) <= LIMIT for r in measured])}; "
                     f"loop ms p5/p50/p95 {_loop_ms(timed)}{_placed(measured)}")
        pooled += timed
    lines.append(f"all {len(folders)} runs, rows by their loop's spread:")
    low = float("-inf")
    for high in (*HOST_BUCKETS, float("inf")):
        within = [r for r in pooled if low < (r.calibration.seconds.spread or 0) <= high]
        label = f"<= {high:.0%}" if high != float("inf") else f"> {low:.0%}"
        lines.append(f"  loop spread {label:<6}: {len(within)} rows; their spread <= 5%: "
                     f"{_share([(r.gen_tok_s.spread or 0) <= LIMIT for r in within])}")
        low = high
    return lines


def _placed(measured: list[MeasuredBench]) -> str:
    """The placement policies of the run's unpinned rows, the moves `steady` made, and the
    runs per round where a profile's `repeats` made them more than one."""
    policies = sorted({r.placement or "free" for r in measured if r.pinned_cpu is None})
    moves = sum(r.moves for r in measured)
    repeats = sorted({r.repeats for r in measured} - {1})
    return ((f"; placement {'+'.join(policies)}, {moves} moves" if policies else "")
            + (f"; repeats {'+'.join(map(str, repeats))}" if repeats else ""))


def _loop_ms(timed: list[MeasuredBench]) -> str:
    """The loop's times before every round of the run: a host core that runs at two speeds
    (3.3 ms on the steady H100 leases, 7-8 ms on the others) shows as a wide p5..p95."""
    values = sorted(v * 1e3 for r in timed for v in r.calibration.seconds.values)
    if not values:
        return "-"
    return "/".join(f"{values[round(q * (len(values) - 1))]:.1f}" for q in (0.05, 0.5, 0.95))


def ratio_to(folder: Path, reference: Path) -> str:
    """`none`'s decode tok/s (the rows' medians) in `folder` over the same rows (model, batch,
    dtype, prompts) in `reference`: how far two runs of one cell's rounds sit apart."""
    def medians(where: Path) -> dict[tuple, float]:
        return {(r.backend, r.model, r.batch, r.dtype, r.prompts): r.gen_tok_s.median
                for group in rows(where).values() for r in group if r.subject == "none"}
    mine, theirs = medians(folder), medians(reference)
    ratios = sorted(mine[k] / theirs[k] for k in mine.keys() & theirs.keys() if theirs[k])
    if not ratios:
        return f"  none's decode tok/s over {reference}: no rows in common"
    return (f"  none's decode tok/s over {reference}: {len(ratios)} rows; median "
            f"{statistics.median(ratios):.2f}, range {ratios[0]:.2f}–{ratios[-1]:.2f}")


def _rank_corr(a: list[float], b: list[float]) -> float:
    """Spearman's rho (no ties expected in timings); NaN where either side is constant."""
    ra, rb = (sorted(range(len(v)), key=v.__getitem__) for v in (a, b))
    rank_a, rank_b = [0] * len(a), [0] * len(b)
    for rank, (i, j) in enumerate(zip(ra, rb, strict=True)):
        rank_a[i], rank_b[j] = rank, rank
    if len(set(a)) < 2 or len(set(b)) < 2:
        return float("nan")
    n, moved = len(a), sum((x - y) ** 2 for x, y in zip(rank_a, rank_b, strict=True))
    return 1 - 6 * moved / (n * (n * n - 1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folders", nargs="*", type=Path, default=[Path("reports/raw")],
                        help="folders of cell JSONs, or cell JSON files")
    parser.add_argument("--profile", default="", help="only the rows of this bench profile")
    parser.add_argument("--foreign", action="store_true",
                        help="also the share of the bench CPU other work took")
    parser.add_argument("--by-subject", action="store_true",
                        help="also each subject's median overheads per model")
    parser.add_argument("--ratio-to", type=Path, metavar="REFERENCE",
                        help="also none's decode tok/s over the same rows of this folder or file")
    parser.add_argument("--by-host", action="store_true",
                        help="only each run's host (steal, loop spread) and all rows pooled by it")
    args = parser.parse_args()
    if args.by_host:
        print("\n".join(by_host(args.folders)))
        return 0
    for folder in args.folders:
        print("\n".join(report(folder, args.profile, args.foreign, args.by_subject)))
        if args.ratio_to:
            print(ratio_to(folder, args.ratio_to))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
