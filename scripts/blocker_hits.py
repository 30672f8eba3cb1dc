"""Whether the `server` check's blockers were served from the prompt cache, cell by cell.

A blocker holds the server under test while its group is sent (checks/server_workload.py);
one answered from the cache holds nothing. For each cell JSON of a folder (default
reports/raw): per model, the blocker requests of `none` by the cached tokens the server
reported (None: a server that reports none) and the range of their seconds.

    python3 scripts/blocker_hits.py                       # the committed matrix
    git worktree add /tmp/old 3d96061 && python3 scripts/blocker_hits.py /tmp/old/reports/raw
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path


def main(folder: Path) -> int:
    hits: Counter[tuple[str, str, str]] = Counter()
    seconds: dict[tuple[str, str, str], list[float]] = {}
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith((".bench.json", ".curve.json")) or "upstream" in path.name \
                or "@" in path.name:
            continue
        for row in json.loads(path.read_text(encoding="utf-8")).get("results", []):
            if row["check"] != "server" or row["subject"] != "none" or row["verdict"] == "skip":
                continue
            metrics = row.get("metrics") or {}
            for name, cached in (metrics.get("cached_tokens") or {}).items():
                if "blocker" in name:
                    key = (row["model"], name, str(cached))
                    hits[key] += 1
                    seconds.setdefault(key, []).append(
                        float((metrics.get("seconds") or {}).get(name, 0.0)))
    for key, n in sorted(hits.items()):
        model, name, cached = key
        print(f"{model:<8} {name:<26} cached {cached:>4}: {n} cell(s), "
              f"{min(seconds[key]):.3f}-{max(seconds[key]):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("reports/raw")))
