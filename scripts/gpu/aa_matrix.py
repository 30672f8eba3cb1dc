"""matrix.yaml with scripts/aa_history.py's A/A subjects added, for an A/A on the GPU.

The GPU machine has no package index, so the subjects are not installed: their entry points
(scripts/aa_subjects.py) are found on the path run_cell.sh's EXTRA_PATH adds. Every cell,
backend and profile is the matrix's own, so a run of this file is a run of the cuda cell.
It needs only pyyaml, so the machine's own python runs it.

    python3 scripts/gpu/aa_matrix.py OUT.yaml
    MATRIX=OUT.yaml EXTRA_PATH=$PWD/scripts SUBJECTS=none,marker,probe,mlxcompat \
      MODELS=llama CHECKS=install,import scripts/gpu/run_cell.sh run mlx-lm-0.32.2
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

from aa_history import ROLE, subjects  # noqa: E402


def main() -> int:
    doc = yaml.safe_load((ROOT / "matrix.yaml").read_text())
    mine = subjects(None)
    mine.pop("mlxcompat")  # the matrix's own, with all its roles
    clash = sorted(set(mine) & set(doc["subjects"]) | set(ROLE) & set(doc.get("roles", {})))
    if clash:
        sys.exit(f"matrix.yaml already has {clash}")
    doc["subjects"].update(mine)
    doc["roles"] = {**doc.get("roles", {}), **ROLE}
    out = Path(sys.argv[1])
    out.write_text(yaml.safe_dump(doc, sort_keys=False))
    # The release lists of `all` subject families sit beside the matrix they belong to.
    lock = ROOT / "matrix.lock.json"
    out.with_suffix(".lock.json").write_text(lock.read_text())
    print(f"{out}: subjects {', '.join(mine)} added (role aa), with {lock.name}'s releases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
