"""Patch-status's target map: a replaced target is judged by what it serves, per family and
defect, against the cell's need probe (findings as the probe writes them)."""

from mlxcompat.checks.patch_status import run_patch_status
from mlxcompat.checks.spec import Case, Context
from mlxcompat.checks.target_families import family_needs, target_needs
from mlxcompat.records.need import Need, NeedRecord
from mlxcompat.records.patches import PatchRow
from mlxcompat.registry import Registry, RoleDecl

BROKEN = "broken: max |Δ| 7.0e-02 > 1e-04"
# As on mlx-lm 0.31.2: Mamba v1's padding drifts (fresh and padded history), its cache
# carries state exactly (history-equal), every other family batches exactly.
FINDINGS = {"ssm cache extract/merge": "present", "mamba fresh": BROKEN,
            "mamba history": BROKEN, "mamba history-equal": "correct",
            **{f"{f} {m}": "correct" for f in ("mamba2", "qwen3_next", "qwen3_5")
               for m in ("fresh", "history", "history-equal")}}
NEED = NeedRecord(needs={"ssm": Need(needed=True, why="w", findings=FINDINGS),
                         "glm4v": Need(needed=False, why="fine",
                                       findings={"padded/inner": "correct"})})
MAMBA = RoleDecl("mamba", ("m",), ("parity",), (), need="ssm")
FORCED = RoleDecl("mamba-legacy", ("m",), ("parity",), (), need="ssm", forced=True)
REGISTRY = Registry({}, {r.name: r for r in (MAMBA, FORCED)})
PREFILL = "mlx_lm.generate:PromptProcessingBatch.prompt"
HISTORY = ["mlx_lm.generate:_make_cache", "mlx_lm.models.cache:ArraysCache.merge"]


def _status(role: str, changed: list[str]):
    row = PatchRow(subject="s", role=role, entry_point="m:f", observed="applied",
                   claim=["applied"], changed=changed)
    ctx = Context("s", REGISTRY, 1e-4, patches={role: row}, need=lambda: NEED)
    return run_patch_status(Case("patch-status", role=role), ctx)


def test_family_needs_per_family():
    assert family_needs(NEED) == {"mamba": True, "mamba2": False, "qwen3_next": False,
                                  "qwen3_5": False, "glm4v": False}


def test_prefill_target_serves_the_padding_defect():
    found = target_needs([PREFILL], NEED)
    assert found.needed == {PREFILL: ["mamba fresh", "mamba history"]} and not found.unneeded


def test_cache_targets_are_unneeded_where_history_equal_is_exact():
    found = target_needs(HISTORY, NEED)
    assert set(found.unneeded) == set(HISTORY) and not found.needed
    assert "mamba history-equal" in found.unneeded[HISTORY[0]]


def test_a_broken_cache_round_trip_makes_them_needed():
    findings = {**FINDINGS, "mamba2 history-equal": BROKEN}
    need = NeedRecord(needs={"ssm": Need(needed=True, findings=findings)})
    assert target_needs(HISTORY, need).needed[HISTORY[0]] == ["mamba2 history-equal"]


def test_unmapped_and_unprobed_targets_are_listed_not_judged():
    found = target_needs(["mlx_lm.models.cache:KVCache.filter",
                          "mlx_lm.models.nemotron_h:Mixer._ssm"], NEED)
    assert found.unmapped == ["mlx_lm.models.cache:KVCache.filter"]  # no rule covers it
    assert found.unprobed == ["mlx_lm.models.nemotron_h:Mixer._ssm"]  # no finding recorded
    assert not found.needed and not found.unneeded


def test_one_family_capability_findings():
    found = target_needs(["mlx_vlm.models.glm4v_moe.language:GLM4VModel.__call__"], NEED)
    assert list(found.unneeded.values()) == [["padded/inner"]]


def test_a_patch_wider_than_needed_fails_patch_status():
    row = _status("mamba", [PREFILL, *HISTORY])
    assert row.verdict == "fail" and "wider than needed" in row.detail
    assert set(row.metrics["targets_unneeded"]) == set(HISTORY)
    assert row.metrics["families"]["mamba"] is True


def test_the_minimal_patch_passes():
    row = _status("mamba", [PREFILL])
    assert row.verdict == "pass" and "wider" not in row.detail


def test_a_forced_role_is_flagged_not_failed():
    row = _status("mamba-legacy", [PREFILL, *HISTORY])
    assert row.verdict == "pass" and "wider than needed" in row.detail
