"""Where this release needs a patch, decided in a clean process before any subject runs.

`python -m mlxcompat.drivers.need <out.json> <device> <force-cpu patterns>` exercises
upstream's own batching on real tiny models of each family and writes, per capability a role
patches: {"needed": bool | None, "why": str, "capabilities": {name: state}}, where a state is
`absent`, `correct` or `broken: <error or Δ>`. The patch-status check judges every subject
against this record. No patch module imports it: the judge never shares code with what it
judges.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mlxcompat.results import SkipCheck, describe_exception, write_json_atomic

SSM_MODELS = ("mamba", "mamba2", "qwen3_next", "qwen3_5")
SSM_MODES = ("fresh", "history")
TOLERANCE = 1e-4


def _batched_state(model: str, mode: str) -> str:
    """`correct`, `absent` (model or API not in this release) or `broken: ...`."""
    from mlxcompat.checks.compare import compare_rows
    from mlxcompat.checks.parity import parity_rows
    from mlxcompat.drivers.lm_runner import run_batched, run_single
    from mlxcompat.models.lm import build_lm

    try:
        net = build_lm(model, 0)
        rows = parity_rows(mode, 0)
        batched = run_batched(net, rows)
    except SkipCheck:
        return "absent"
    except Exception as exc:
        return f"broken: {describe_exception(exc)}"
    single = [run_single(net, r) for r in rows]
    verdict, _metrics, detail = compare_rows(
        [b.logprobs for b in batched], [s.logprobs for s in single],
        [b.tokens for b in batched], [s.tokens for s in single], TOLERANCE,
        stalled=[i for i, b in enumerate(batched) if b.finish_reason is None])
    return "correct" if verdict == "pass" else f"broken: {detail}"


def _extract_merge() -> str:
    from mlxcompat.drivers.capabilities import cache_module

    cache = cache_module()
    kind = getattr(cache, "MambaCache", cache.ArraysCache)
    if not (hasattr(kind, "extract") and hasattr(kind, "merge")):
        return "absent"
    return "present"


def _ssm() -> dict[str, Any]:
    capabilities = {"ssm cache extract/merge": _extract_merge()}
    for model in SSM_MODELS:
        for mode in SSM_MODES:
            capabilities[f"{model} {mode}"] = _batched_state(model, mode)
    broken = {k: v for k, v in capabilities.items() if v.startswith("broken")}
    why = "; ".join(f"{k}: {v.removeprefix('broken: ')[:120]}" for k, v in broken.items())
    return {"needed": bool(broken), "capabilities": capabilities,
            "why": f"upstream batching differs from single runs: {why}" if broken else
            "upstream batching of every SSM family here equals single runs"}


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
