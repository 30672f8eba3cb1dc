"""BatchGenerator's two halves without its scheduler, for the CUDA defect of our segmented
prefill: the bare loop (probe_restore.py decode, rows leaving included) is exact on CUDA,
BatchGenerator with the segmented prefill is not in about one process of four.

mlx-lm 0.32.2's own `PromptProcessingBatch` (the prefill: a cache per row merged, right
padding, `prepare` / `finalize`, evaluation and `mx.clear_cache()` per step) and
`GenerationBatch` (pipelined decode, per-row log-probabilities, `filter` as rows finish),
driven by hand on probe_restore.py's rows, each compared with the row alone:

- `halves`: both halves, our segmented prefill installed on `PromptProcessingBatch.prompt`;
- `halves-none`: both halves, nothing installed (the control);
- `bare-prefill`: probe_restore.py's segmented prefill, then `GenerationBatch`;
- `bare-decode`: `PromptProcessingBatch.prompt` with our segmented prefill, then
  probe_restore.py's decode.

PASSES passes per process; `check`: the prompts of `shapes mamba2 long-prompt` (same lengths,
other tokens) in place of probe_restore.py's. Needs mlx-lm 0.32.2's halves (0.32 and later).

    PYTHONPATH=src python scripts/gpu/probe_halves.py VARIANT [cpu] [check] [PASSES]
"""

from __future__ import annotations

import sys

import mlx.core as mx

if "cpu" in sys.argv[2:]:  # before mlx_lm makes its generation stream
    mx.set_default_device(mx.cpu)

import numpy as np
import probe_restore as bare
from mlx_lm.generate import GenerationBatch, PromptProcessingBatch, StopSequences
from mlx_lm.models.cache import make_prompt_cache
from mlx_lm.sample_utils import greedy_sampler

from mlxcompat.checks.shapes import shape_rows
from mlxcompat.models.lm import mamba2
from mlxcompat.patches import ssm_segments
from mlxcompat.patches.journal import Journal

VARIANTS = ("halves", "halves-none", "bare-prefill", "bare-decode")


def _generation(net, cache: list, rows: list[list[int]], last: list[int]) -> GenerationBatch:
    n = len(rows)
    return GenerationBatch(net, list(range(n)), mx.array(last), cache, [list(r) for r in rows],
                           [None] * n, greedy_sampler, [[] for _ in range(n)],
                           [StopSequences()] * n, list(bare.LEAVE))


def _drain(batch: GenerationBatch) -> list[list]:
    found: list[list] = [[] for _ in bare.LEAVE]
    while len(batch):
        for r in batch.next():
            found[r.uid].append(np.array(r.logprobs.astype(mx.float32)))
    return found


def _prompt_batch(net, n: int) -> PromptProcessingBatch:
    return PromptProcessingBatch(net, list(range(n)), [make_prompt_cache(net) for _ in range(n)],
                                 prefill_step_size=bare.CHUNK, samplers=[None] * n,
                                 logits_processors=[[] for _ in range(n)],
                                 max_tokens=list(bare.LEAVE))


def _run(variant: str, net, prompts: list[list[int]]) -> list[list]:
    rows, last = [p[:-1] for p in prompts], [p[-1] for p in prompts]
    if variant in ("halves", "halves-none"):
        return _drain(_prompt_batch(net, len(prompts)).generate([list(p) for p in prompts]))
    if variant == "bare-prefill":
        cache = net.make_cache()
        bare._batched(net, rows, bare._cuts(tuple(len(r) for r in rows)), "default", cache)
        return _drain(_generation(net, cache, rows, last))
    batch = _prompt_batch(net, len(prompts))
    batch.prompt(rows)
    return bare._decode(net, batch.prompt_cache, last, pipelined=True, leave=bare.LEAVE)


def main() -> int:
    variant = sys.argv[1] if sys.argv[1:] else ""
    if variant not in VARIANTS:
        sys.exit(f"usage: probe_halves.py {{{'|'.join(VARIANTS)}}} [cpu] [PASSES]")
    passes = next((int(a) for a in sys.argv[2:] if a.isdigit()), 4)
    print("mlx", mx.__version__, "default device", mx.default_device(), "variant", variant,
          flush=True)
    net = mamba2(0)
    prompts = ([list(r.prompt) for r in shape_rows("long-prompt")[0]]
               if "check" in sys.argv[2:] else bare._tokens())
    alone = bare._alone_decoded(net, [p[:-1] for p in prompts], [p[-1] for p in prompts])
    journal = Journal()
    if variant != "halves-none":
        ssm_segments.install(journal)
    exact = []
    for k in range(passes):
        got = _run(variant, net, prompts)
        deltas = [bare._decoded_delta(got[i], alone[i]) for i in range(len(prompts))]
        exact.append(not any("DIFFER" in d or "nan" in d for d in deltas))
        print(f"{variant} pass {k}: decoded max|Δ| per row (vs alone) "
              + " ".join(f"{bare.LENGTHS[i]}:{d}" for i, d in enumerate(deltas)), flush=True)
    journal.undo()
    print(f"{variant}: exact in {sum(exact)} of {passes} passes", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
