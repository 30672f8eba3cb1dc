"""The `server` rows of every cell, one line each: subjects, verdicts, the rows' seconds, and
how many subjects' servers died of upstream's NameError (`name 'gen' is not defined` in the
server log of a `shared-prefix` row, the first scenario sent); then our own subjects' verdicts
and the subject×cell runs before and after dedup (`same_as`: one run for byte-identical modules;
`borrowed`: behaviour rows taken from `none`'s run, the entry points having changed nothing).

    python3 scripts/server_cells.py                      # reports/raw/*.json
    python3 scripts/server_cells.py reports/evidence/issue21/full-run-3680964/*.json.gz
"""

from __future__ import annotations

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

OURS = ("mlxcompat", "mlxcompat-forced")


def _load(path: Path) -> dict:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if path.suffix == ".gz" else raw)


def _cells(args: list[str]) -> list[Path]:
    if args:
        return [Path(a) for a in args]
    return sorted(p for p in Path("reports/raw").glob("*.json")
                  if not p.name.endswith((".bench.json", ".curve.json"))
                  and ".upstream." not in p.name)


def main() -> None:
    ours: Counter[tuple[str, str]] = Counter()
    runs = shared = borrowed = 0
    for path in _cells(sys.argv[1:]):
        doc = _load(path)
        runs += len(doc["subjects"])
        shared += sum(1 for s in doc["subjects"].values() if s.get("same_as"))
        borrowed += sum(1 for s in doc["subjects"].values()
                        if s.get("borrowed") and not s.get("same_as"))
        rows = [r for r in doc["results"] if r["check"] == "server"]
        own = [r for r in rows if not r.get("borrowed_from")]
        if not rows:
            continue
        verdicts = Counter(r["verdict"] for r in rows)
        died = {r["subject"] for r in rows if r["scenario"] == "shared-prefix" and
                "name 'gen' is not defined" in " ".join(r["metrics"].get("server_log") or [])}
        subjects = {r["subject"] for r in rows}
        seconds = sum(r.get("seconds") or 0 for r in own)
        print(f"{doc['cell']}: {len(subjects)} subjects ({len({r['subject'] for r in own})} "
              f"with rows of their own), {dict(sorted(verdicts.items()))}, row seconds "
              f"{seconds:.0f}, servers dead of the NameError: {len(died)} of {len(subjects)}")
        ours.update((r["subject"], r["verdict"]) for r in rows if r["subject"] in OURS)
    print("ours:", dict(sorted(ours.items())))
    print(f"subject x cell runs {runs}, shared by same_as {shared}, behaviour borrowed from "
          f"none {borrowed}, distinct behaviour runs {runs - shared - borrowed}")


if __name__ == "__main__":
    main()
