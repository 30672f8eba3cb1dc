"""Did the `server` check's groups reach a busy server? Per folder of cell JSONs (default
reports/raw), over every served `shared-prefix` / `long-prompt` row that did not error:

- rows that record it (harness 9fe7d35 on): `metrics.queued_s`, how long before its
  blocker's answer each group was let in, and the head starts used;
- every row, also older ones: a group whose quickest request was answered in less than 80%
  of the time its blocker still had after the head start (`seconds` of the row's requests)
  cannot have waited behind the blocker, so it was sent after the blocker's prefill (the
  estimate behind docs/server-workloads.md's "about 9% of the committed CPU groups").

    python3 scripts/late_groups.py                          # the committed matrix
    mkdir /tmp/old && git archive a3037f7 reports/raw | tar -x -C /tmp/old && \\
      python3 scripts/late_groups.py /tmp/old/reports/raw   # before the queue guard
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

GROUPS = {"shared-prefix": [("shared-0", "shared-1", "shared-2", "shared-prefix-blocker-0"),
                            ("shared-3", "shared-4", "shared-5", "shared-prefix-blocker-1")],
          "long-prompt": [("long-300", "long-233", "long-97", "long-prompt-blocker-2")]}
OLD_HEAD_START_S = 0.05  # the fixed head start before 9fe7d35


def main(folder: Path) -> int:
    counts = {"cpu": [0, 0], "cuda": [0, 0]}
    queued: list[float] = []
    heads: list[float] = []
    runs: dict[tuple[str, str, str], str] = {}  # a subject's server run of a model: its outcome
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".bench.json") or ".upstream." in path.name:
            continue
        backend = "cuda" if "@cuda" in path.name else "cpu"
        for row in json.loads(path.read_text(encoding="utf-8")).get("results", []):
            if row["check"] != "server":
                continue
            if not (row.get("borrowed_from") or row.get("reused")):
                run = (path.name, row["subject"], row["model"])
                if "not queued" in (row.get("detail") or ""):
                    runs[run] = "failed"
                elif "queued" in (row.get("metrics") or {}).get("retried_after", ""):
                    runs.setdefault(run, "served again")
                else:
                    runs.setdefault(run, "")
            if row.get("scenario") not in GROUPS or row["verdict"] == "error":
                continue
            metrics = row.get("metrics") or {}
            queued += metrics.get("queued_s", [])
            heads += [metrics["head_start_s"]] if "head_start_s" in metrics else []
            seconds = metrics.get("seconds") or {}
            head = metrics.get("head_start_s", OLD_HEAD_START_S)
            for group in GROUPS[row["scenario"]]:
                if all(name in seconds for name in group):
                    left = seconds[group[-1]] - head
                    counts[backend][0] += 1
                    counts[backend][1] += min(seconds[n] for n in group[:-1]) < 0.8 * left \
                        or left <= 0
    print(f"{folder}:")
    for backend, (groups, late) in counts.items():
        if groups:
            print(f"  {backend}: {groups} groups (rows x groups), {late} look sent after their "
                  f"blocker's prefill ({late / groups:.0%})")
    outcomes = list(runs.values())
    print(f"  server runs: {len(outcomes)}; served again for a group that reached an idle "
          f"server: {outcomes.count('served again')}; failed so ('not queued'): "
          f"{outcomes.count('failed')}")
    if queued:
        print(f"  queued_s recorded on {len(queued)} groups: min {min(queued) * 1e3:.1f} ms, "
              f"median {sorted(queued)[len(queued) // 2] * 1e3:.1f} ms; head starts "
              f"{min(heads) * 1e3:.0f}-{max(heads) * 1e3:.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("reports/raw")))
