"""Which part of BatchGenerator's context makes our segmented prefill go wrong on CUDA?

Bare, segment-and-restore is exact on CUDA (probe_restore.py); inside BatchGenerator with our
patch forced, `shapes mamba2 long-prompt` gets other tokens in the first pass of some
processes (probe_segments.py). This takes BatchGenerator's context apart, one piece per
process, each compared with the rows served one at a time before anything was patched:

- `none`: no patch (the control: exact everywhere so far);
- `plain`: the patch forced, as probe_segments.py's `plain`;
- `noclear`: `mx.clear_cache` a no-op (the prompt loop frees the allocator's cache after
  every step, while the restore's `mx.where` may still hold the state it replaced);
- `evalsync`: `mx.async_eval` is `mx.eval` (no decode step in flight while the next runs);
- `defaultstream`: BatchGenerator on the default stream instead of its thread-local one;
- `segonly`: only the segmented prefill installed (no cache-class patch, no need probe run
  in the process before the first pass).

Two batched passes per process; each prints, per row, whether its tokens equal the row
alone and the largest |Δ logprob|. Run every variant in processes of its own, batched work
first after the single-row reference.

    PYTHONPATH=src python scripts/gpu/probe_context.py VARIANT [cpu]
"""

from __future__ import annotations

import sys

import mlx.core as mx

if "cpu" in sys.argv[2:]:  # before mlx_lm makes its generation stream
    mx.set_default_device(mx.cpu)

import numpy as np

from mlxcompat.checks.shapes import shape_rows
from mlxcompat.drivers.lm_runner import run_batched, run_single
from mlxcompat.models.lm import mamba2
from mlxcompat.patches import mamba_cache, ssm_segments
from mlxcompat.patches.journal import Journal

VARIANTS = ("none", "plain", "noclear", "evalsync", "defaultstream", "segonly")


def _context(variant: str) -> None:
    """Take the one piece of BatchGenerator's context apart that `variant` names."""
    if variant == "noclear":
        mx.clear_cache = lambda: None
    elif variant == "evalsync":
        mx.async_eval = mx.eval
    elif variant == "defaultstream":
        import mlx_lm.generate as gen

        gen.generation_stream = mx.default_stream(mx.default_device())


def _patch(variant: str) -> Journal | None:
    if variant == "none":
        return None
    if variant == "segonly":
        journal = Journal()
        ssm_segments.install(journal)
        return journal
    mamba_cache.patch_mlx_lm_for_mamba()  # forced: mamba2 segmented even where exact
    return None


def _compare(tag: str, net, rows, options, alone) -> bool:
    batched = run_batched(net, rows, **options)
    exact = True
    for i, (b, s) in enumerate(zip(batched, alone, strict=True)):
        n = min(len(b.logprobs), len(s.logprobs))
        delta = max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
                    for x, y in zip(b.logprobs[:n], s.logprobs[:n], strict=True))
        same = list(b.tokens) == list(s.tokens[:len(b.tokens)])
        exact &= same
        print(f"{tag:<22} row {i} ({len(rows[i].prompt):>3} tokens): tokens "
              f"{'equal' if same else 'DIFFER'} max|Δ| {delta:.3g}", flush=True)
    return exact


def main() -> int:
    variant = sys.argv[1] if sys.argv[1:] else ""
    if variant not in VARIANTS:
        sys.exit(f"usage: probe_context.py {{{'|'.join(VARIANTS)}}} [cpu]")
    print("mlx", mx.__version__, "default device", mx.default_device(), "variant", variant,
          flush=True)
    net = mamba2(0)
    rows, options = shape_rows("long-prompt")
    alone = [run_single(net, r) for r in rows]
    _context(variant)
    journal = _patch(variant)
    passes = [_compare(f"{variant} pass {k}", net, rows, options, alone) for k in (1, 2)]
    if journal is not None:
        journal.undo()
    elif variant != "none":
        mamba_cache.unpatch()
    print(f"{variant}: tokens equal in pass 1 {passes[0]}, pass 2 {passes[1]}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
