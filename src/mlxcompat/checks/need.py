"""The need probe: where this release needs a patch, decided in a clean process.

`python -m mlxcompat.checks.need <out.json> <device> <force-cpu patterns>` runs upstream's
own batching on real tiny models of each family, batched against each prompt alone, and
writes a `NeedRecord`: per capability a role patches (`ssm`, `glm4v`, `nemotron_h`,
`qwen3_5_vlm`, `gemma4_vlm`), whether it is
needed, why, and what each family gave (`absent` · `correct` · `present` · `broken: …`).
The patch-status check judges every subject against it. It runs in `none`'s process (no
patch applied) or in a process of its own. The patches decide with self-checks of their
own; no patch module imports this one, and this one imports no patch: the judge never
shares code with what it judges.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.parity import parity_rows
from mlxcompat.errors import SkipCheck, describe_exception
from mlxcompat.records.files import write_json_atomic
from mlxcompat.records.need import Need, NeedRecord

SSM_MODELS = ("mamba", "mamba2", "qwen3_next", "qwen3_5")
# history-equal: equal tails, so nothing is padded: a failure there is the cache's (carrying
# state between turns), not padding's; the patch-status target map tells the two apart.
SSM_MODES = ("fresh", "history", "history-equal")
# The GLM4V language model, batched on both paths (inner GLM4VModel, outer LanguageModel).
GLM4V_SCENARIOS = ("padded", "filter", "extend", "merge")
# Rows that carry an image's rope delta (mixed with text rows, admitted mid-batch) and a text
# row masked beside an image row, on the paths the glm4v check runs them.
GLM4V_IMAGE_FINDINGS = (("image-mixed", "inner"), ("image-mixed", "outer"),
                        ("image-extend", "inner"), ("image-extend", "outer"),
                        ("text-masked", "outer"))
TOLERANCE = 1e-4


def _batched_state(model: str, mode: str) -> str:
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
    found = compare_rows(
        [b.logprobs for b in batched], [s.logprobs for s in single],
        [b.tokens for b in batched], [s.tokens for s in single], TOLERANCE,
        stalled=[i for i, b in enumerate(batched) if b.finish_reason is None])
    return "correct" if found.verdict == "pass" else f"broken: {found.detail}"


def _extract_merge() -> str:
    from mlxcompat.drivers.modules import cache_module

    cache = cache_module()
    kind = getattr(cache, "MambaCache", cache.ArraysCache)
    return "present" if hasattr(kind, "extract") and hasattr(kind, "merge") else "absent"


def _decide(findings: dict[str, str], wrong: str, right: str) -> Need:
    broken = {k: v for k, v in findings.items() if v.startswith("broken")}
    why = "; ".join(f"{k}: {v.removeprefix('broken: ')[:120]}" for k, v in broken.items())
    return Need(needed=bool(broken), why=f"{wrong}: {why}" if broken else right,
                findings=findings)


def ssm() -> Need:
    findings = {"ssm cache extract/merge": _extract_merge()}
    for model in SSM_MODELS:
        for mode in SSM_MODES:
            findings[f"{model} {mode}"] = _batched_state(model, mode)
    return _decide(findings, "upstream batching differs from single runs",
                   "upstream batching of every SSM family here equals single runs")


def glm4v() -> Need:
    """The tiny GLM4V language model batched (BatchKVCache) against each prompt alone: text
    rows, and rows that carry an image's rope delta."""
    try:
        import mlx_vlm  # noqa: F401
    except ImportError:
        return Need(needed=False, why="mlx-vlm is not installed in this cell")
    from mlxcompat.checks.glm4v import GLM4V_PATHS, run_scenario
    from mlxcompat.models.glm4v import build_glm4v_language_model

    try:
        lm = build_glm4v_language_model(0)
    except SkipCheck as exc:
        return Need(needed=False, why=str(exc))
    findings = {}
    pairs = [(s, p) for p in GLM4V_PATHS for s in GLM4V_SCENARIOS] + list(GLM4V_IMAGE_FINDINGS)
    for scenario, path in pairs:
        try:
            found = run_scenario(lm, scenario, path, TOLERANCE)
            state = "correct" if found.verdict == "pass" else f"broken: {found.detail}"
        except Exception as exc:
            state = f"broken: {describe_exception(exc)}"
        findings[f"{scenario}/{path}"] = state
    return _decide(findings, "batched GLM4V decoding differs from single runs",
                   "upstream GLM4V code batches BatchKVCache correctly")


def nemotron_h() -> Need:
    """Nemotron-H (its own Mamba2 mixer over the shared SSM step) batched against alone."""
    findings = {f"nemotron_h {mode}": _batched_state("nemotron_h", mode) for mode in SSM_MODES}
    if all(v == "absent" for v in findings.values()):
        return Need(needed=False, why="no nemotron_h in this release", findings=findings)
    return _decide(findings, "batched nemotron_h differs from single runs",
                   "upstream batches the tiny nemotron_h exactly")


def _vlm(model: str) -> Callable[[], Need]:
    """An mlx-vlm language model through its own batch caches against each prompt alone."""
    def probe() -> Need:
        try:
            import mlx_vlm  # noqa: F401
        except ImportError:
            return Need(needed=False, why="mlx-vlm is not installed in this cell")
        from mlxcompat.checks.vlm import run_vlm_scenario
        from mlxcompat.models import vlm_text

        try:
            lm = getattr(vlm_text, model)(0)
        except SkipCheck as exc:
            return Need(needed=False, why=str(exc))
        findings = {}
        for scenario in GLM4V_SCENARIOS:
            try:
                found = run_vlm_scenario(lm, scenario, TOLERANCE)
                state = "correct" if found.verdict == "pass" else f"broken: {found.detail}"
            except Exception as exc:
                state = f"broken: {describe_exception(exc)}"
            findings[f"{model} {scenario}"] = state
        return _decide(findings, f"batched {model} differs from single runs",
                       f"upstream batches the tiny {model} exactly")
    return probe


PROBES: dict[str, Callable[[], Need]] = {
    "ssm": ssm, "glm4v": glm4v, "nemotron_h": nemotron_h,
    "qwen3_5_vlm": _vlm("qwen3_5_vlm"), "gemma4_vlm": _vlm("gemma4_vlm")}


def probe_needs() -> NeedRecord:
    needs = {}
    for name, probe in PROBES.items():
        try:
            needs[name] = probe()
        except Exception as exc:
            needs[name] = Need(needed=None, why=f"probe raised {describe_exception(exc)}")
    return NeedRecord(needs=needs)


def main(argv: list[str]) -> int:
    from mlxcompat.drivers.device import select_device

    out, device = Path(argv[0]), argv[1] if len(argv) > 1 else "cpu"
    patterns = [p for p in (argv[2] if len(argv) > 2 else "").split(",") if p]
    select_device(device, patterns)
    write_json_atomic(out, probe_needs().to_json())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
