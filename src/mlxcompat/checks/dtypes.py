"""Real dtypes: parity and the cache contract in bfloat16, float16 and 4-bit weights.

`dtype-parity`: the parity modes `fresh`, `leave` and `history` with the tiny model cast
(`set_dtype`) or quantized (`mlx.nn.quantize`, 4 bits, group 32: the layers whose input
dimension is a multiple of 32, all but Mamba v1's rank-4 time-step projection); batched
against each prompt alone in the same dtype, with the same comparator and tolerance as
float32. The bounds a dtype really has are measured and recorded as expectations (tokens
equal, |Δ| bound).
`dtype-cache`: the cache contract (extract every row, merge back, decode on) in that dtype,
and every cache the batching path builds, merges, extracts or hands out keeps the floating
dtypes a single-sequence cache of the same model has (a patch that upcasts a merged cache
to float32 doubles its memory and changes its numerics).
"""

from __future__ import annotations

import copy
from typing import Any

from mlxcompat.checks.compare import compare_rows
from mlxcompat.checks.parity import parity_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.models import load_factory
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

DTYPES = ("bfloat16", "float16", "q4")
MODES = ("fresh", "leave", "history")
QUANT = {"group_size": 32, "bits": 4}
FLOATING = ("float32", "bfloat16", "float16")
_BUILT: dict[tuple[str, str], Any] = {}


EXPERTS_NOTE = "MoE experts kept float32 (mlx's CPU gather_mm / gather_qmm take float32 only)"


def _is_expert(module: Any) -> bool:
    """mlx-lm's MoE expert layer (models/switch_layers.py), by name: its gathered matmuls run
    in float32 only on mlx's CPU, quantized or not."""
    return type(module).__name__ == "SwitchLinear"


def _quantizable(path: str, module: Any) -> bool:
    weight = getattr(module, "weight", None)
    return (hasattr(module, "to_quantized") and weight is not None and not _is_expert(module)
            and weight.shape[-1] % QUANT["group_size"] == 0)


def has_experts(net: Any) -> bool:
    return any(_is_expert(m) for _, m in net.named_modules())


def model_in(factory: str, dtype: str, seed: int = 0) -> Any:
    """The tiny model of `factory` with its weights in `dtype` (a copy of its own: the
    float32 model other checks share is never changed)."""
    import mlx.core as mx
    import mlx.nn as nn

    key = (factory, dtype)
    if key not in _BUILT:
        net = load_factory(factory)(seed)
        if dtype == "q4":  # layers whose input does not split into groups stay float32
            nn.quantize(net, **QUANT, class_predicate=_quantizable)
        else:
            net.set_dtype(getattr(mx, dtype))
            for _, module in net.named_modules():
                if _is_expert(module):
                    module.set_dtype(mx.float32)
        mx.eval(net.parameters())
        _BUILT[key] = net
    return _BUILT[key]


def run_dtype_parity(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    def body() -> ResultRow:
        from mlxcompat.drivers.lm_runner import run_batched, run_single

        net = model_in(ctx.registry.models[case.model].factory, case.dtype, seed)
        rows = parity_rows(case.mode, seed)
        batched = run_batched(net, rows)
        single = [run_single(net, r) for r in rows]
        found = compare_rows([b.logprobs for b in batched], [s.logprobs for s in single],
                             [b.tokens for b in batched], [s.tokens for s in single],
                             ctx.tolerance,
                             stalled=[i for i, b in enumerate(batched) if b.finish_reason is None])
        _say_experts(net, found)
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def _say_experts(net: Any, found: Any) -> None:
    if has_experts(net):
        found.metrics["experts"] = "float32"
        found.detail = f"{found.detail}; {EXPERTS_NOTE}" if found.detail else EXPERTS_NOTE


def _floating(cache: list[Any]) -> set[str]:
    from mlxcompat.drivers.lm_prompt_cache import dtypes_of

    return {d for d in dtypes_of(cache) if d in FLOATING}


def run_dtype_cache(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    """The cache contract in `case.dtype`, and the dtypes of every cache on the way."""

    def body() -> ResultRow:
        from mlxcompat.drivers.lm_cache import decode_steps, extract_rows, merge_rows, prefill_alone
        from mlxcompat.drivers.lm_rows import Row
        from mlxcompat.drivers.lm_runner import run_batched

        net = model_in(ctx.registry.models[case.model].factory, case.dtype, seed)
        prompts = [r.prompt for r in parity_rows("fresh", seed)]
        singles = [prefill_alone(net, p) for p in prompts]
        want = _floating(singles[0][0])
        batch = merge_rows([c for c, _ in singles])
        seen = {"merged": _floating(batch)}
        warm, _ = decode_steps(net, batch, [t for _, t in singles], 2)
        last = [row[-1] for row in warm]
        rows = extract_rows(batch, len(prompts))
        seen["extracted"] = set().union(*(_floating(r) for r in rows))
        remerged = merge_rows(rows)
        seen["re-merged"] = _floating(remerged)
        handed = run_batched(net, [Row(p, 2) for p in prompts])
        if all(h.cache is not None for h in handed):
            seen["handed out"] = set().union(*(_floating(h.cache) for h in handed))
        unsplit_tokens, unsplit = decode_steps(net, copy.copy(batch), last, 4)
        split_tokens, split = decode_steps(net, remerged, last, 4)
        found = compare_rows(split, unsplit, split_tokens, unsplit_tokens, ctx.tolerance)
        _say_experts(net, found)
        wrong = {k: sorted(v) for k, v in seen.items() if v != want}
        found.metrics["cache_dtypes"] = {"single": sorted(want),
                                         **{k: sorted(v) for k, v in seen.items()}}
        if wrong:
            found.verdict = "fail"
            found.detail = (f"caches change dtype (single-sequence caches hold {sorted(want)}): "
                            + ", ".join(f"{k} {v}" for k, v in wrong.items())
                            + f"; {found.detail}")
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def _parity_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("dtype-parity", model=m.name, mode=mode, dtype=d)
                              for m in selection.models_of("lm") for d in DTYPES
                              for mode in MODES if mode in m.modes])


def _cache_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("dtype-cache", model=m.name, scenario="extract-merge",
                                   dtype=d) for m in selection.models_of("lm") for d in DTYPES])


def _parity_values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"mode": MODES, "dtype": DTYPES}


def _cache_values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"scenario": ("extract-merge",), "dtype": DTYPES}


PARITY = CheckSpec("dtype-parity", ("model", "mode", "dtype", "subject"), _parity_cases,
                   run_dtype_parity, _parity_values, default=False)
CACHE = CheckSpec("dtype-cache", ("model", "dtype", "subject"), _cache_cases, run_dtype_cache,
                  _cache_values, default=False)
