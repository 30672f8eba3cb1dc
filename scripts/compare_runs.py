"""Two matrix runs row by row: is every verdict and |Δ| of the first run the same in the second?

Both folders of cell JSONs are read as typed records (schema 2 is migrated on reading:
`mode` split into role / scenario / path / test, `max_abs_delta` renamed `delta`), rows are
keyed by (cell document, check, model, mode, role, scenario, path, test, subject), and for each
key in both runs the verdict, |Δ| and tokens-equal flag are compared. Rows only in the second
run are new checks, models or cells; rows only in the first run vanished, and fail the
comparison, as does any difference. `--metrics` compares the named entries of the rows'
metrics as well (e.g. `cached_tokens`: the server rows' prompt-cache hits, request by request).

    python3 scripts/compare_runs.py /work/before/reports/raw reports/raw
    python3 scripts/compare_runs.py /tmp/old/reports/raw reports/raw --metrics cached_tokens
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mlxcompat.records.cell import read_cell
from mlxcompat.records.rows import ResultRow

Key = tuple[str, ...]


def rows(folder: Path) -> dict[Key, ResultRow]:
    found: dict[Key, ResultRow] = {}
    for path in sorted(folder.glob("*.json")):
        if ".upstream." in path.name or path.name.endswith((".bench.json", ".curve.json")):
            continue
        doc = read_cell(path)
        for row in doc.results:
            found[(doc.cell, *row.key())] = row
    return found


def same(a: ResultRow, b: ResultRow, metrics: list[str]) -> bool:
    return (a.verdict, a.delta, a.tokens_equal, *(a.metrics.get(m) for m in metrics)) == \
        (b.verdict, b.delta, b.tokens_equal, *(b.metrics.get(m) for m in metrics))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("first", type=Path)
    parser.add_argument("second", type=Path)
    parser.add_argument("--show", type=int, default=20, help="differences listed")
    parser.add_argument("--metrics", nargs="*", default=[],
                        help="entries of the rows' metrics compared as well")
    args = parser.parse_args()
    a, b = rows(args.first), rows(args.second)
    both = [k for k in a if k in b]
    differ = [k for k in both if not same(a[k], b[k], args.metrics)]
    compared = sum(1 for k in both if any(m in a[k].metrics for m in args.metrics))
    vanished = [k for k in a if k not in b]
    new = Counter(k[0] for k in b if k not in a)
    print(f"{args.first}: {len(a)} rows; {args.second}: {len(b)} rows")
    what = ", ".join(["verdict", "|Δ|", "tokens-equal", *args.metrics])
    print(f"in both: {len(both)}; {what} identical: {len(both) - len(differ)}; "
          f"different: {len(differ)}" + (f" ({compared} rows have {', '.join(args.metrics)})"
                                         if args.metrics else ""))
    print(f"only in the first (vanished): {len(vanished)}; only in the second (new): "
          f"{sum(new.values())} ({', '.join(f'{c} {n}' for c, n in new.most_common(8))})")
    for k in differ[: args.show]:
        print(f"  differs: {' '.join(p for p in k if p)}: {a[k].verdict} {a[k].delta} -> "
              f"{b[k].verdict} {b[k].delta}" + "".join(
                  f"; {m} {a[k].metrics.get(m)} -> {b[k].metrics.get(m)}" for m in args.metrics
                  if a[k].metrics.get(m) != b[k].metrics.get(m)))
    for k in vanished[: args.show]:
        print(f"  vanished: {' '.join(p for p in k if p)}")
    return 1 if differ or vanished else 0


if __name__ == "__main__":
    raise SystemExit(main())
