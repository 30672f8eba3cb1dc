"""Segment-and-restore on mamba2's cache with no BatchGenerator and no patch installed.

`shapes mamba2 long-prompt` went wrong under our segmented prefill on CUDA only, in some
processes and not others, and an unpatched run after it in the same process went wrong too
(scripts/gpu/README.md). This replays the mechanism bare: four prompts (300, 177, 41, 233
tokens), right-padded, fed in chunks of 64 cut at every row's end; after each piece the rows
for which it was padding get their state back (`ssm_segments._restore`, `mx.where`). Each
row's final state is compared with the row fed alone over the same cuts. Variants:

- `default`: the default stream;
- `stream`: a stream of its own, as mlx-lm's generation stream;
- `sync`: that stream with `mx.synchronize()` after every piece;
- `copy`: that stream, the previous state copied (`x * 1`) before the piece runs;
- `norestore`: no state put back, the control: the short rows must differ.

Each variant runs `ROUNDS` times in one process; a state that differs in some rounds and not
in others is a race, not arithmetic. The check of an evaluated array: the first piece's input
state is read back after the piece has run, and must be what it was.

With `decode`, every prompt but its last token is prefilled so (the layout BatchGenerator
gives), then 8 greedy steps decode from the last tokens, batched and alone, each step's
log-probabilities compared; inside BatchGenerator the defect showed in decoded tokens (once
as NaN) while the prefilled states were exact bare. Variants there: `default` and `stream`
as above with decoding pipelined (the next step queued by `mx.async_eval` before this one is
read, as GenerationBatch does), `eval` (not pipelined), `chunked` (the states evaluated and
`mx.clear_cache()` after every 64 columns, as PromptProcessingBatch does), `leave` and
`leave-eval` (rows leave the batch after 4, 6, 5 and 3 tokens, the check's max_tokens: the
cache filtered and the queued step indexed down, as GenerationBatch does), `norestore`.

    PYTHONPATH=src python scripts/gpu/probe_restore.py [cpu] [decode] [ROUNDS]
"""

from __future__ import annotations

import itertools
import sys

import mlx.core as mx

if "cpu" in sys.argv[1:]:  # before anything makes a stream
    mx.set_default_device(mx.cpu)

import numpy as np

from mlxcompat.models.lm import mamba2
from mlxcompat.patches.ssm_segments import _restore  # the patch's own, nothing installed

LENGTHS = (300, 177, 41, 233)
CHUNK = 64
DECODE = 8


def _cuts(lengths: tuple[int, ...]) -> list[int]:
    width = max(lengths)
    return sorted({0, width, *range(0, width, CHUNK), *lengths})


def _tokens(seed: int = 17) -> list[list[int]]:
    rng = np.random.default_rng(seed)
    return [[int(t) for t in rng.integers(1, 128, size=n)] for n in LENGTHS]


def _states(cache: list) -> list[np.ndarray]:
    mx.eval([a for c in cache for a in c.cache if a is not None])
    return [np.array(a.astype(mx.float32)) for c in cache for a in c.cache if a is not None]


def _alone(net, tokens: list[int], cuts: list[int]) -> list[np.ndarray]:
    cache = net.make_cache()
    for a, b in itertools.pairwise([c for c in cuts if c <= len(tokens)]):
        net(mx.array([tokens[a:b]]), cache=cache)
        mx.eval([x for c in cache for x in c.cache if x is not None])
    return _states(cache)


def _batched(net, rows: list[list[int]], cuts: list[int], variant: str,
             cache: list | None = None) -> tuple[list, float]:
    width = max(len(r) for r in rows)
    padded = mx.array([r + [0] * (width - len(r)) for r in rows])
    cache = net.make_cache() if cache is None else cache
    drift = 0.0
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        if variant == "chunked" and a % CHUNK == 0 and a:
            mx.eval([x for c in cache for x in c.cache if x is not None])
            mx.clear_cache()
        real = mx.array([b <= len(r) for r in rows])
        before = [list(c.cache) for c in cache]
        if variant == "copy":
            before = [[None if x is None else x * 1 for x in old] for old in before]
        if k == 1:
            mx.eval([x for old in before for x in old if x is not None])
            kept = [np.array(x.astype(mx.float32)) for old in before for x in old
                    if x is not None]
        net(padded[:, a:b], cache=cache)
        if variant != "norestore":
            _restore(cache, before, real)
        if variant == "sync":
            mx.eval([x for c in cache for x in c.cache if x is not None])
            mx.synchronize()
        if k == 1:  # an evaluated input must never change once a later piece has run
            again = [np.array(x.astype(mx.float32)) for old in before for x in old
                     if x is not None]
            drift = max(float(np.max(np.abs(x - y))) for x, y in zip(kept, again, strict=True))
    return _states(cache), drift


def _decode(net, cache: list, first: list[int], pipelined: bool,
            leave: tuple[int, ...] | None = None) -> list[list[np.ndarray]]:
    """DECODE greedy steps from each row's last prompt token: per row, its log-probabilities
    per step. With `leave`, row i leaves after leave[i] tokens as in GenerationBatch: the
    cache filtered (`ArraysCache.filter`) and the step already queued for the whole batch
    indexed down to the rows that stay."""
    def step(y):
        logits = net(y[:, None], cache=cache)[:, -1, :]
        logprobs = logits - mx.logsumexp(logits, axis=-1, keepdims=True)
        return mx.argmax(logprobs, axis=-1), logprobs

    dispatch = mx.async_eval if pipelined else mx.eval
    rows = list(range(len(first)))  # the batch's rows, by their index in `first`
    found: list[list[np.ndarray]] = [[] for _ in first]
    queued = step(mx.array(first))
    dispatch(*queued)
    for k in range(DECODE):
        current = queued
        if k + 1 < DECODE:
            queued = step(current[0])
            dispatch(*queued)
        logprobs = np.array(current[1].astype(mx.float32))
        for j, r in enumerate(rows):
            found[r].append(logprobs[j])
        keep = [j for j, r in enumerate(rows) if leave is None or len(found[r]) < leave[r]]
        if not keep:
            break
        if len(keep) < len(rows):
            for c in cache:
                c.filter(keep)
            queued = (queued[0][mx.array(keep)], queued[1][mx.array(keep)])
            rows = [rows[j] for j in keep]
    return found


def _decoded_delta(batched: list[np.ndarray], alone: list[np.ndarray]) -> str:
    """|Δ| of a row's log-probabilities over the steps whose tokens agree so far."""
    worst = 0.0
    for k, (b, a) in enumerate(zip(batched, alone, strict=False)):
        worst = max(worst, float(np.max(np.abs(b - a))))
        if np.argmax(b) != np.argmax(a):
            return f"{worst:.3g} tokens DIFFER at step {k}"
    return f"{worst:.3g}"


LEAVE = (4, 6, 5, 3)  # the check's max_tokens: rows leave the batch on different steps


def _alone_decoded(net, rows: list[list[int]], last: list[int]) -> list[list[np.ndarray]]:
    """Each row alone: prefilled over the batch's cuts, then decoded from its last token."""
    cuts = _cuts(tuple(len(r) for r in rows))
    alone = []
    for r, t in zip(rows, last, strict=True):
        cache = net.make_cache()
        for a, b in itertools.pairwise([c for c in cuts if c <= len(r)]):
            net(mx.array([r[a:b]]), cache=cache)
        alone.append(_decode(net, cache, [t], pipelined=False)[0])
    return alone


def _decode_main(net, rounds: int) -> int:
    rows = [r[:-1] for r in _tokens()]
    last = [r[-1] for r in _tokens()]
    cuts = _cuts(tuple(len(r) for r in rows))
    alone = _alone_decoded(net, rows, last)
    for variant in ("default", "stream", "eval", "chunked", "leave", "leave-eval",
                    "norestore"):
        for n in range(rounds):
            stream = mx.default_stream(mx.default_device()) if variant == "default" \
                else mx.new_stream(mx.default_device())
            with mx.stream(stream):
                cache = net.make_cache()
                _batched(net, rows, cuts, variant, cache)
                got = _decode(net, cache, last, pipelined=not variant.endswith("eval"),
                              leave=LEAVE if variant.startswith("leave") else None)
            print(f"{variant:<10} round {n}: decoded max|Δ| per row (vs alone) "
                  + " ".join(f"{LENGTHS[i]}:{_decoded_delta(got[i], alone[i])}"
                             for i in range(len(rows))), flush=True)
    return 0


def _rows_of(states: list[np.ndarray], row: int) -> list[np.ndarray]:
    return [s[row:row + 1] for s in states]


def main() -> int:
    rounds = next((int(a) for a in sys.argv[1:] if a.isdigit()), 5)
    print("mlx", mx.__version__, "default device", mx.default_device(), flush=True)
    net = mamba2(0)
    if "decode" in sys.argv[1:]:
        return _decode_main(net, rounds)
    rows, cuts = _tokens(), _cuts(LENGTHS)
    alone = [_alone(net, r, cuts) for r in rows]
    for variant in ("default", "stream", "sync", "copy", "norestore"):
        for n in range(rounds):
            stream = mx.default_stream(mx.default_device()) if variant == "default" \
                else mx.new_stream(mx.default_device())
            with mx.stream(stream):
                got, drift = _batched(net, rows, cuts, variant)
            deltas = [max(float(np.max(np.abs(x - y)))
                          for x, y in zip(_rows_of(got, i), alone[i], strict=True))
                      for i in range(len(rows))]
            print(f"{variant:<8} round {n}: max|Δ| per row (state vs alone) "
                  + " ".join(f"{LENGTHS[i]}:{d:.3g}" for i, d in enumerate(deltas))
                  + f" | evaluated input changed by {drift:.3g}", flush=True)
    again = [_alone(net, r, cuts) for r in rows]
    moved = max(float(np.max(np.abs(x - y))) for a, b in zip(alone, again, strict=True)
                for x, y in zip(a, b, strict=True))
    print(f"alone again after every variant: max|Δ| {moved:.3g}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
