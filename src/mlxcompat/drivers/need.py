"""Where this release needs a patch, decided in a clean process before any subject runs.

`python -m mlxcompat.drivers.need <out.json> <device> <force-cpu patterns>` writes, per
capability a role patches, {"needed": bool | None, "why": str}. The patch-status check judges
every subject against this record; no patch module ever imports it.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mlxcompat.results import describe_exception, write_json_atomic


def _ssm() -> dict[str, Any]:
    from mlxcompat.drivers.capabilities import probe_lm

    decision, why = probe_lm().ssm_patch_decision()
    return {"needed": decision == "needed", "why": why}


def _glm4v() -> dict[str, Any]:
    try:
        import mlx_vlm  # noqa: F401
    except ImportError:
        return {"needed": False, "why": "mlx-vlm is not installed in this cell"}
    from mlxcompat.drivers.glm4v import glm4v_needs_patch

    needed, why = glm4v_needs_patch()
    return {"needed": needed, "why": why}


PROBES = {"ssm": _ssm, "glm4v": _glm4v}


def probe_needs() -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, probe in PROBES.items():
        try:
            record[name] = probe()
        except Exception as exc:
            record[name] = {"needed": None, "why": f"probe raised {describe_exception(exc)}"}
    return record


def main(argv: list[str]) -> int:
    from mlxcompat.drivers.device import select_device

    out, device = Path(argv[0]), argv[1] if len(argv) > 1 else "cpu"
    patterns = [p for p in (argv[2] if len(argv) > 2 else "").split(",") if p]
    select_device(device, patterns)
    write_json_atomic(out, probe_needs())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
