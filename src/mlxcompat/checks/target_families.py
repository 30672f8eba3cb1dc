"""What each replaced target serves: the need probe's findings a patch of it could fix.

The need probe records per capability one finding per family and mode (`mamba2 history`,
`glm4v`'s `padded/inner`, …). A subject's patch replaces targets (`module:qualname`); this
map says which of those findings each target can affect, so that patch-status can flag a
target replaced where nothing it serves is broken in the cell (a patch wider than the
release needs). A target outside the map is reported as unmapped (what it serves is not
known here), and one whose findings the cell's probe never recorded as unprobed (a family
without a tiny model, say): both are listed, never judged.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field

from mlxcompat.records.need import NeedRecord

SSM = ("mamba", "mamba2", "qwen3_next", "qwen3_5")
ANY = "*"

# target pattern -> ((capability, families served, modes served), ...); first match wins.
_PREFILL = ("fresh", "history")  # padding enters prefill whether or not a row has history
_CACHE = ("history-equal",)  # carrying state between turns, with nothing padded
Serves = tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]
RULES: tuple[tuple[str, Serves], ...] = (
    ("mlx_lm.generate:PromptProcessingBatch.prompt", (("ssm", SSM, _PREFILL),)),
    ("mlx_lm.generate:BatchGenerator._process_prompts", (("ssm", SSM, _PREFILL),)),
    ("mlx_lm.models.base:create_ssm_mask", (("ssm", SSM, _PREFILL),)),
    ("mlx_lm.models.cache:ArraysCache.make_mask", (("ssm", SSM, _PREFILL),)),
    ("mlx_lm.models.gated_delta:*", (("ssm", ("qwen3_next", "qwen3_5"), _PREFILL),)),
    ("mlx_lm.generate:_make_cache", (("ssm", SSM, _CACHE),)),
    ("mlx_lm.generate:_merge_caches", (("ssm", SSM, _CACHE),)),
    ("mlx_lm.models.cache:BatchMambaCache*", (("ssm", SSM, _CACHE),)),
    ("mlx_lm.models.cache:MambaCache.*", (("ssm", SSM, _CACHE),)),
    ("mlx_lm.models.cache:ArraysCache.*", (("ssm", SSM, _CACHE),)),
    ("mlx_lm.models.cache:cache_length", (("ssm", SSM, _CACHE),)),
    *((f"mlx_lm.models.{family}:*", (("ssm", (family,), _PREFILL),)) for family in SSM),
    ("mlx_lm.models.ssm:*", (("ssm", ("mamba2",), _PREFILL),
                             ("nemotron_h", ("nemotron_h",), _PREFILL))),
    ("mlx_lm.models.nemotron_h:*", (("nemotron_h", ("nemotron_h",), _PREFILL),)),
    ("mlx_vlm.models.glm4v_moe.*", (("glm4v", (ANY,), (ANY,)),)),
    ("mlx_vlm.models.qwen3_5.*", (("qwen3_5_vlm", (ANY,), (ANY,)),)),
    ("mlx_vlm.models.gemma4.*", (("gemma4_vlm", (ANY,), (ANY,)),)),
)


def _findings(need: NeedRecord, capability: str) -> list[tuple[str, str, str, str]]:
    """(key, family, mode, state) of a capability's findings that judge a family: a cache's
    presence (`ssm cache extract/merge`) and families the release lacks (`absent`) do not.
    `mamba2 history` -> (mamba2, history); a one-family capability's `padded/inner` ->
    (capability, padded/inner)."""
    record = need.needs.get(capability)
    out = []
    for key, state in (record.findings.items() if record else ()):
        if key == "ssm cache extract/merge" or state == "absent":
            continue
        family, _, mode = key.partition(" ")
        out.append((key, *((family, mode) if mode else (capability, key)), state))
    return out


def family_needs(need: NeedRecord) -> dict[str, bool]:
    """Per family the need probe tried: whether any of its findings is broken."""
    found: dict[str, bool] = {}
    for capability in need.needs:
        for _, family, _, state in _findings(need, capability):
            found[family] = found.get(family, False) or state.startswith("broken")
    return found


@dataclass
class TargetNeed:
    """Which targets serve a broken finding, which serve only correct ones, which no rule
    covers, and which serve only findings the probe never recorded."""

    needed: dict[str, list[str]] = field(default_factory=dict)  # target -> broken findings
    unneeded: dict[str, list[str]] = field(default_factory=dict)  # target -> findings served
    unmapped: list[str] = field(default_factory=list)
    unprobed: list[str] = field(default_factory=list)


def _served(target: str, need: NeedRecord) -> list[tuple[str, str]] | None:
    """(finding key, state) of every finding the target serves; None: no rule covers it."""
    for pattern, serves in RULES:
        if fnmatch.fnmatchcase(target, pattern):
            return [(key, state) for capability, families, modes in serves
                    for key, family, mode, state in _findings(need, capability)
                    if (ANY in families or family in families)
                    and (ANY in modes or mode in modes)]
    return None


def target_needs(changed: list[str], need: NeedRecord) -> TargetNeed:
    """Each changed target sorted by what the cell's need probe found for what it serves."""
    result = TargetNeed()
    for target in changed:
        served = _served(target, need)
        if served is None:
            result.unmapped.append(target)
            continue
        if not served:
            result.unprobed.append(target)
            continue
        broken = [key for key, state in served if state.startswith("broken")]
        if broken:
            result.needed[target] = broken
        else:
            result.unneeded[target] = sorted({key for key, _ in served})
    return result
