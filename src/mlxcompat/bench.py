"""Throughput profiles and bench rows: batched vs sequential tok/s, speedup, patch overhead."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Profile:
    """What one bench run measures; profiles live in matrix.yaml (settings.bench)."""

    name: str
    batches: tuple[int, ...]
    rounds: int
    warmup: int
    prompt_tokens: int
    gen_tokens: int
    models: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def bench_prompts(batch: int, length: int, seed: int = 0) -> list[list[int]]:
    """Fixed prompts of one length (so padding does not blur the comparison)."""
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(1, 128, size=length)] for _ in range(batch)]


def summarise(values: Sequence[float]) -> dict[str, float | int]:
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else 0.0
    return {"mean": mean, "stddev": sd, "cv": sd / mean if mean else 0.0, "rounds": len(values)}


def measure(run: Callable[[], Any], rounds: int, warmup: int) -> list[Any]:
    """Warm-up runs (compile, allocate) then `rounds` measured ones."""
    for _ in range(warmup):
        run()
    return [run() for _ in range(rounds)]


def bench_row(model: str, subject: str, batch: int, profile: Profile, batched: list[Any],
              sequential: list[Any] | None, peak_mb: float | None, backend: str) -> dict[str, Any]:
    """One `bench` row of the cell JSON from measured batched (and sequential) timings."""
    gen = summarise([t.decode_tok_s for t in batched])
    row: dict[str, Any] = {
        "model": model, "subject": subject, "batch": batch, "backend": backend,
        "profile": profile.name, "prompt_tokens": profile.prompt_tokens,
        "gen_tokens": profile.gen_tokens, "gen_tok_s": gen,
        "prefill_tok_s": statistics.fmean(t.prefill_tok_s for t in batched),
        "sequential_tok_s": None, "speedup": None, "peak_memory_mb": peak_mb,
    }
    if sequential:
        seq = statistics.fmean(t.decode_tok_s for t in sequential)
        row["sequential_tok_s"] = seq
        row["speedup"] = gen["mean"] / seq if seq else None
    return row


def add_overhead(rows: list[dict[str, Any]]) -> None:
    """Overhead of a patched subject against `none` on the same model, batch and backend."""
    base = {(r["model"], r["batch"], r.get("backend"), r.get("label", "")): r for r in rows
            if r["subject"] == "none" and r.get("gen_tok_s")}
    for r in rows:
        ref = base.get((r["model"], r["batch"], r.get("backend"), r.get("label", "")))
        if r["subject"] != "none" and ref and r.get("gen_tok_s"):
            r["overhead"] = r["gen_tok_s"]["mean"] / ref["gen_tok_s"]["mean"] - 1.0
