"""Turn `nox -l --json` into the job matrix: the matrix cells, optionally only one tag.

Reads the session list on stdin and prints `cells=<json list>` for $GITHUB_OUTPUT, so the
workflow never names a release itself.
"""

from __future__ import annotations

import json
import sys


def cells(sessions: list[dict], tag: str) -> list[str]:
    picked = [s for s in sessions if s["name"] == "matrix"]
    if tag and tag != "all":
        picked = [s for s in picked if tag in s.get("tags", [])]
    return [s["call_spec"]["cell"] for s in picked]


if __name__ == "__main__":
    tag = sys.argv[1] if len(sys.argv) > 1 else "all"
    found = cells(json.load(sys.stdin), tag)
    if not found:
        sys.exit(f"no matrix cells for tag {tag!r}")
    print(f"cells={json.dumps(found)}")
