"""Compare the rows of two cell JSONs: verdict, |Δ|, tokens_equal of every result row and the
observed status of every patch row, keyed by check, row keys and subject.

    python scripts/compare_cells.py reports/raw/A.json reports/raw/B.json

Exit 0 when every row of each is in the other with the same values, else 1 (and the
differences are printed). Used for the git-pinned cell against its release's PyPI cell.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mlxcompat.records.cell import read_cell


def rows(path: Path) -> tuple[dict, dict, dict]:
    doc = read_cell(path)
    results = {r.key(): (r.verdict, r.delta, r.tokens_equal) for r in doc.results}
    # A file a subject wrote may carry the time in its name (vMLX's backup of what it replaced).
    patches = {(p.subject, p.role): (p.observed, tuple(re.sub(r"\d{8}-\d{6}", "<time>", c)
                                                      for c in p.changed))
               for p in doc.patches}
    info = {"cell": doc.cell, "packages": doc.env.packages,
            "sources": {k: v.model_dump() for k, v in doc.install.sources.items()}}
    return results, patches, info


def main(a: str, b: str) -> int:
    ra, pa, ia = rows(Path(a))
    rb, pb, ib = rows(Path(b))
    print(f"A {ia}\nB {ib}")
    diff = [(k, ra.get(k), rb.get(k)) for k in sorted({*ra, *rb}) if ra.get(k) != rb.get(k)]
    pdiff = [(k, pa.get(k), pb.get(k)) for k in sorted({*pa, *pb}) if pa.get(k) != pb.get(k)]
    for key, x, y in diff[:20] + pdiff[:20]:
        print(f"differs: {key}: {x} vs {y}")
    print(f"result rows: {len(ra)} vs {len(rb)}, {len(diff)} differ; patch rows: {len(pa)} vs "
          f"{len(pb)}, {len(pdiff)} differ")
    return 1 if diff or pdiff else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
