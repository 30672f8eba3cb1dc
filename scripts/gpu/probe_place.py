"""Does placing the timed thread hold a GPU round's core? An A/B/C in one process.

The rounds of full GPU cell runs met a core whose speed switched between two levels (the
calibration loop at ~3.5 or ~7 ms, tok/s following it). This times the bench's own rounds
(drivers.bench.time_batched, the `gpu` profile's 64 tokens, mixed prompts) under each policy
of `mlxcompat.placement` in turn, case by case, in blocks, so every policy meets the same
stretch of the host:

  free    every thread where the kernel puts it (the GPU default)
  alone   the main thread on a CPU of its own, MLX's threads on the others
  steady  alone, moving the main thread off a CPU whose loop slowed past 1.5x its fastest

For every round it keeps the loop before and after, tok/s, the main thread's CPU, its
run-queue wait (/proc/thread-self/schedstat: waiting for a CPU inside this VM), its
involuntary switches, the machine's steal, and which of this process's threads were busy
and on which CPU: a slow round with the main thread waiting on the run queue, or sharing its
CPU with a busy thread, is ours to place; one with neither is the host's.

    PYTHONPATH=src python scripts/gpu/probe_place.py [rounds] [blocks] [OUT.jsonl]
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from pathlib import Path

import mlx.core as mx
from read_place import report

from mlxcompat.bench import bench_prompts, calibration_loop, summarise
from mlxcompat.drivers.bench import time_batched
from mlxcompat.models.lm import build_lm
from mlxcompat.placement import POLICIES, Placement

CASES = [("llama", 1), ("llama", 8), ("llama", 32), ("mamba2", 8), ("mamba2", 32)]
WARMUP = 2


def _threads() -> dict[int, tuple[int, int]]:
    """Each thread of this process: (run ns from schedstat, the CPU it last ran on)."""
    found = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            run = int((task / "schedstat").read_text().split()[0])
            cpu = int((task / "stat").read_text().rsplit(")", 1)[1].split()[36])
        except (OSError, ValueError, IndexError):
            continue
        found[int(task.name)] = (run, cpu)
    return found


def _main_state() -> tuple[int, int, int]:
    """(run ns, run-queue wait ns, involuntary switches) of this (the main) thread."""
    run, wait = (int(x) for x in Path("/proc/thread-self/schedstat").read_text().split()[:2])
    switches = 0
    for line in Path("/proc/thread-self/status").read_text().splitlines():
        if line.startswith("nonvoluntary_ctxt_switches"):
            switches = int(line.split()[1])
    return run, wait, switches


def _stat() -> tuple[int, int]:
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
    return sum(fields), fields[7] if len(fields) > 7 else 0


def _everywhere(cpus: set[int]) -> None:
    for task in Path("/proc/self/task").iterdir():
        try:
            os.sched_setaffinity(int(task.name), cpus)
        except (OSError, ValueError):
            continue


def one_round(model, prompts, place: Placement) -> dict:
    loop = place.settle(calibration_loop)
    threads0, main0, stat0 = _threads(), _main_state(), _stat()
    start = time.perf_counter()
    gc.disable()
    timing = time_batched(model, prompts, 64)
    gc.enable()
    wall = time.perf_counter() - start
    threads1, main1, stat1 = _threads(), _main_state(), _stat()
    after = calibration_loop()
    me = os.getpid()
    busy = {tid: cpu for tid, (run, cpu) in threads1.items()
            if tid != me and run - threads0.get(tid, (run, cpu))[0] > 0.5 * wall * 1e9}
    main_cpu = threads1.get(me, (0, -1))[1]
    return {"loop_ms": loop * 1e3, "after_ms": after * 1e3, "tok_s": timing.decode_tok_s,
            "main_cpu": main_cpu, "wait": (main1[1] - main0[1]) / 1e9 / wall,
            "ran": (main1[0] - main0[0]) / 1e9 / wall, "nvcsw": main1[2] - main0[2],
            "steal": (stat1[1] - stat0[1]) / max(1, stat1[0] - stat0[0]),
            "busy_cpus": sorted(busy.values()), "shared": main_cpu in busy.values(),
            "moves": place.moves}


def main() -> int:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 15
    blocks = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    out = Path(sys.argv[3] if len(sys.argv) > 3 else
               Path(os.environ.get("OUT", ".")) / "probe-place.jsonl")
    every = set(os.sched_getaffinity(0))
    print(f"mlx {mx.__version__} {mx.default_device()}, {len(every)} CPUs, {rounds} rounds, "
          f"{blocks} blocks -> {out}", flush=True)
    models = {name: build_lm(name) for name in ("llama", "mamba2")}
    places = {policy: Placement(policy, every) for policy in POLICIES}
    kept: list[dict] = []
    with out.open("w") as sink:
        for block in range(blocks):
            for policy in (POLICIES[block % 3:] + POLICIES[:block % 3]):
                _everywhere(every)
                for name, batch in CASES:
                    prompts = bench_prompts(batch, 32, "mixed")
                    got = [one_round(models[name], prompts, places[policy])
                           for _ in range(WARMUP + rounds)][WARMUP:]
                    spread = summarise([g["tok_s"] for g in got]).spread or 0.0
                    loops = [g["loop_ms"] for g in got]
                    print(f"b{block} {policy:<6} {name:<6} b{batch:<3} spread {spread:6.1%}  "
                          f"loop ms {min(loops):.1f}-{max(loops):.1f}  moves "
                          f"{got[-1]['moves'] - got[0]['moves']}  wait max "
                          f"{max(g['wait'] for g in got):.0%}  shared "
                          f"{sum(g['shared'] for g in got)}", flush=True)
                    for g in got:
                        g.update(block=block, policy=policy, model=name, batch=batch)
                        sink.write(json.dumps(g) + "\n")
                    kept += got
    _everywhere(every)
    print("\n" + "\n".join(report(kept)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
