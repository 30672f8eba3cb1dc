"""Do longer rounds hold a GPU row's spread? The same measurement, timed over more of it.

On the lent GPU hosts a CPU's speed switches between two levels that last ~0.5 s and more
(`probe_siblings.py`'s 0.5 s blocks), while a `gpu` profile round (64 tokens) decodes in
52–152 ms: each round lands in one level, so a row's rounds split in two, and placing the
timed thread does not help (README, "2026-12-07, third session"). A round here is `k`
back-to-back `drivers.bench.time_batched` calls of that same profile (64 tokens, mixed
prompts), its tok/s their decode tokens over their decode seconds; k = 1 is today's round.
Cases and k rotate in blocks, so every k meets the same stretch of the host.

    PYTHONPATH=src python scripts/gpu/probe_length.py [rounds] [blocks] [OUT.jsonl]
    PYTHONPATH=src python scripts/gpu/probe_length.py --read OUT.jsonl   (no mlx needed)
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from mlxcompat.bench import bench_prompts, calibration_loop, summarise

CASES = [("llama", 8), ("llama", 32), ("mamba2", 8)]
REPEATS = (1, 4, 16)
WARMUP = 2


def measure(rounds: int, blocks: int, out: Path) -> list[dict]:
    import mlx.core as mx

    from mlxcompat.drivers.bench import time_batched
    from mlxcompat.models.lm import build_lm

    print(f"mlx {mx.__version__} {mx.default_device()}, {rounds} rounds, {blocks} blocks, "
          f"k in {REPEATS} -> {out}", flush=True)
    models = {name: build_lm(name) for name in {n for n, _ in CASES}}
    kept: list[dict] = []
    with out.open("w") as sink:
        for block in range(blocks):
            order = REPEATS[block % len(REPEATS):] + REPEATS[:block % len(REPEATS)]
            for name, batch in CASES:
                prompts = bench_prompts(batch, 32, "mixed")
                for k in order:
                    got = []
                    for i in range(WARMUP + rounds):
                        loop = calibration_loop()
                        start = time.perf_counter()
                        gc.disable()
                        timings = [time_batched(models[name], prompts, 64) for _ in range(k)]
                        gc.enable()
                        wall = time.perf_counter() - start
                        tokens = sum(t.decode_tokens for t in timings)
                        seconds = sum(t.decode_s for t in timings)
                        row = {"block": block, "model": name, "batch": batch, "k": k,
                               "loop_ms": loop * 1e3, "wall_s": wall, "tok_s": tokens / seconds,
                               "parts": [t.decode_tok_s for t in timings]}
                        if i >= WARMUP:
                            got.append(row)
                            sink.write(json.dumps(row) + "\n")
                    sink.flush()  # a call cut off at its limit keeps what it timed
                    spread = summarise([g["tok_s"] for g in got]).spread or 0.0
                    print(f"b{block} {name:<6} b{batch:<3} k={k:<3} spread {spread:6.1%}  "
                          f"round {got[0]['wall_s']:.2f} s", flush=True)
                    kept += got
    return kept


def report(kept: list[dict]) -> list[str]:
    """Per k: rows (block x case) with spread <= 5%, each case's spread per block, and the
    median tok/s against k = 1's (longer rounds must measure the same thing)."""
    rows: dict[tuple, list[float]] = defaultdict(list)
    for g in kept:
        rows[(g["k"], g["model"], g["batch"], g["block"])].append(g["tok_s"])
    lines = []
    for k in sorted({key[0] for key in rows}):
        spreads = {key: summarise(v).spread or 0.0 for key, v in rows.items() if key[0] == k}
        wall = statistics.median(g["wall_s"] for g in kept if g["k"] == k)
        tight = sum(s <= 0.05 for s in spreads.values())
        lines.append(f"k={k:<3} rows spread <= 5%: {tight}/{len(spreads)}; round s median "
                     f"{wall:.2f}; spreads " + " ".join(
                         f"{s:.1%}" for _, s in sorted(spreads.items())))
    lines.append("median tok/s per case (all blocks), against k=1:")
    for model, batch in sorted({(g["model"], g["batch"]) for g in kept}):
        med = {k: statistics.median(g["tok_s"] for g in kept
                                    if (g["model"], g["batch"], g["k"]) == (model, batch, k))
               for k in sorted({g["k"] for g in kept})}
        lines.append(f"   {model:<6} b{batch:<3} " + "  ".join(
            f"k={k} {v:7.0f} ({v / med[min(med)]:.2f}x)" for k, v in med.items()))
    return lines


def main() -> int:
    if sys.argv[1:2] == ["--read"]:
        kept = [json.loads(s) for s in Path(sys.argv[2]).read_text().splitlines() if s]
    else:
        rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
        blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 2
        out = Path(sys.argv[3] if len(sys.argv) > 3 else
                   Path(os.environ.get("OUT", ".")) / "probe-length.jsonl")
        kept = measure(rounds, blocks, out)
    print("\n" + "\n".join(report(kept)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
