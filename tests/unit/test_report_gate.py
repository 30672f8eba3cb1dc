"""The report's throughput gate: a quick profile is never gated, a gating one only against a
baseline from the same machine, and a slowdown beyond its noise fails the report."""

from __future__ import annotations

import json
from pathlib import Path

from cellkit import build


def _bench(values: list[float], gate: bool) -> dict:
    med = sorted(values)[len(values) // 2]
    spread = {"median": med, "values": values, "rounds": len(values), "ci95": [med, med]}
    return {"kind": "measured", "model": "llama", "subject": "none", "batch": 8,
            "backend": "cpu", "profile": "bench" if gate else "quick", "gating": gate,
            "gen_tok_s": spread, "prefill_tok_s": spread}


def _with_bench(raw: Path, values: list[float], gate: bool, cpu: str = "test") -> None:
    doc = json.loads((raw / "mlx-lm-0.32.2.json").read_text())
    doc["bench"] = [_bench(values, gate)]
    doc["env"]["fingerprint"]["cpu"] = cpu
    (raw / "mlx-lm-0.32.2.json").write_text(json.dumps(doc))


STEADY = [1000.0, 1010.0, 990.0, 1005.0, 995.0, 1002.0, 998.0]
SLOW = [v * 0.6 for v in STEADY]


def test_quick_profile_is_never_gated(raw) -> None:
    _with_bench(raw, STEADY, gate=False)
    build(raw, accept=True)
    _with_bench(raw, SLOW, gate=False)
    code, line, _ = build(raw)
    assert code == 0, line


def test_gating_profile_on_another_machine_is_not_compared(raw) -> None:
    _with_bench(raw, STEADY, gate=True)
    build(raw, accept=True)
    _with_bench(raw, SLOW, gate=True, cpu="another CPU")
    code, line, _ = build(raw)
    assert code == 0, line


def test_gating_profile_flags_a_significant_slowdown_on_the_same_machine(raw, capsys) -> None:
    _with_bench(raw, STEADY, gate=True)
    build(raw, accept=True)
    _with_bench(raw, SLOW, gate=True)
    code, line, _ = build(raw)
    assert code == 1 and "1 regression(s)" in line
    assert "throughput: mlx-lm-0.32.2 llama batch 8 none" in capsys.readouterr().out


def test_noise_within_the_threshold_is_not_flagged(raw) -> None:
    _with_bench(raw, STEADY, gate=True)
    build(raw, accept=True)
    _with_bench(raw, [v * 0.9 for v in STEADY], gate=True)
    code, line, _ = build(raw)
    assert code == 0, line
