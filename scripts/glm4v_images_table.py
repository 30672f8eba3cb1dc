"""GLM4V rows with an image (and text-masked) per mlx-vlm release, from the committed cells:
the verdict and max |Δ| of `none`, `mlxcompat` and `vllm-mlx-0.6.0` on each scenario and path.

    python3 scripts/glm4v_images_table.py [reports/raw]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

SCENARIOS = ("image-mixed", "image-extend", "text-masked")
SUBJECTS = ("none", "mlxcompat", "vllm-mlx-0.6.0")


def _cell(doc: dict) -> str:
    versions = (doc.get("env") or {}).get("packages") or {}
    return f"{doc['cell']} (mlx-vlm {versions.get('mlx-vlm', '?')})"


def main() -> int:
    folder = Path(sys.argv[1] if len(sys.argv) > 1 else "reports/raw")
    print(f"{'cell':<44} {'scenario/path':<20} " + " ".join(f"{s:<16}" for s in SUBJECTS))
    for path in sorted(folder.glob("*.json")):
        if path.name.endswith(".bench.json") or ".upstream." in path.name:
            continue
        doc = json.loads(path.read_text())
        rows = {(r.get("scenario"), r.get("path"), r["subject"]): r for r in doc["results"]
                if r["check"] == "glm4v" and r.get("scenario") in SCENARIOS}
        for scenario in SCENARIOS:
            for where in ("inner", "outer"):
                found = [rows.get((scenario, where, s)) for s in SUBJECTS]
                if not any(found):
                    continue
                cells = [f"{r['verdict']} {r['delta']:.3g}" if r and r.get("delta") is not None
                         else (r["verdict"] if r else "-") for r in found]
                print(f"{_cell(doc):<44} {scenario + '/' + where:<20} "
                      + " ".join(f"{c:<16}" for c in cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
