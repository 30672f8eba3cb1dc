"""Why does `shapes mamba2 long-prompt` differ under mlxcompat on CUDA and not on the CPU?

Runs the check's own requests (prompts of 300, 177, 41 and 233 tokens, prefill_step_size 64)
through BatchGenerator and against each prompt alone: unpatched, with our segmented prefill,
and with the segmented prefill evaluating every state before and after each segment (a wrong
restore from a lazily shared buffer would show as a difference between the two patched
runs). Then each prompt alone through `generate_step` with several `prefill_step_size`s: on
an exact backend the chunking of a prompt never changes its tokens.

    PYTHONPATH=src python scripts/gpu/probe_segments.py [cpu]   # cpu: mlx's CPU device
    PROBE_VARIANT=sync PYTHONPATH=src python scripts/gpu/probe_segments.py   # see _variant
"""

from __future__ import annotations

import os
import sys

import mlx.core as mx

if sys.argv[1:] == ["cpu"]:  # before mlx_lm makes its generation stream
    mx.set_default_device(mx.cpu)

import numpy as np

from mlxcompat.checks.shapes import shape_rows
from mlxcompat.drivers.lm_runner import run_batched, run_single
from mlxcompat.models.lm import mamba2
from mlxcompat.patches import mamba_cache, ssm_segments


def _compare(tag: str) -> None:
    net = mamba2(0)
    rows, options = shape_rows("long-prompt")
    batched = run_batched(net, rows, **options)
    single = [run_single(net, r) for r in rows]
    for i, (b, s) in enumerate(zip(batched, single, strict=True)):
        n = min(len(b.logprobs), len(s.logprobs))
        delta = max(float(np.max(np.abs(np.asarray(x) - np.asarray(y))))
                    for x, y in zip(b.logprobs[:n], s.logprobs[:n], strict=True))
        same = list(b.tokens) == list(s.tokens[:len(b.tokens)])
        print(f"{tag:<28} row {i} ({len(rows[i].prompt):>3} tokens): tokens "
              f"{'equal' if same else 'DIFFER'} max|Δ| {delta:.3g} batched {list(b.tokens)} "
              f"single {list(s.tokens[:len(b.tokens)])}", flush=True)


def _evaluating_restore(original):
    def restore(ssm, before, real):
        mx.eval([a for old in before for a in old if a is not None],
                [a for c in ssm for a in c.cache if a is not None])
        original(ssm, before, real)
        mx.eval([a for c in ssm for a in c.cache if a is not None])
    return restore


def _chunked() -> None:
    from mlx_lm.generate import generate_step

    net = mamba2(0)
    rows, _ = shape_rows("long-prompt")
    for i, row in enumerate(rows):
        found = {}
        for step in (2048, 64, 16, 7):
            steps = generate_step(prompt=mx.array(row.prompt), model=net, max_tokens=5,
                                  prefill_step_size=step)
            found[step] = [int(t) for t, _ in steps]
        same = len({tuple(v) for v in found.values()}) == 1
        print(f"alone, row {i}: {'same' if same else 'DIFFER'} across prefill_step_size "
              f"{found}", flush=True)


def _singles() -> list[list[int]]:
    net = mamba2(0)
    rows, _ = shape_rows("long-prompt")
    return [list(run_single(net, r).tokens) for r in rows]


def _variant(name: str) -> None:
    """PROBE_VARIANT: plain, nocompile (mx.disable_compile), sync (mx.synchronize around every
    restore), norestore (segments without putting padded rows' state back)."""
    if name == "nocompile":
        mx.disable_compile()
    elif name == "sync":
        original = ssm_segments._restore

        def restore(ssm, before, real):
            mx.synchronize()
            original(ssm, before, real)
            mx.eval([a for c in ssm for a in c.cache if a is not None])
            mx.synchronize()
        ssm_segments._restore = restore
    elif name == "norestore":
        ssm_segments._restore = lambda ssm, before, real: None


def main() -> int:
    variant = os.environ.get("PROBE_VARIANT", "")
    print("mlx", mx.__version__, "default device", mx.default_device(),
          f"variant {variant or '-'}", flush=True)
    if variant:
        _variant(variant)
        before = _singles()
        mamba_cache.patch_mlx_lm_for_mamba()  # forced: mamba2 segmented even where exact
        _compare(f"mlxcompat ({variant})")
        _compare(f"mlxcompat ({variant}) again")
        mamba_cache.unpatch()
        after = _singles()
        print(f"{variant}: a fresh model's one-prompt tokens after the patched runs "
              f"{'unchanged' if after == before else 'CHANGED'} {after if after != before else ''}",
              flush=True)
        return 0
    _compare("none")
    mamba_cache.patch_mlx_lm_for_mamba()  # forced: mamba2 segmented even where exact
    _compare("mlxcompat")
    original = ssm_segments._restore
    ssm_segments._restore = _evaluating_restore(original)
    try:
        _compare("mlxcompat, eval'd")
    finally:
        ssm_segments._restore = original
        mamba_cache.unpatch()
    _chunked()
    return 0


if __name__ == "__main__":
    sys.exit(main())
