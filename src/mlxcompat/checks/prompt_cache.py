"""`prompt-cache`: save / load / trim round trips of every cache the batching path creates or
hands out, each followed by decoding that must equal the run without the round trip.

Scenarios (the caches a patch may build or replace):
- `extracted-row`: rows prefilled alone, merged, decoded two steps, then extracted one by
  one (the cache a server keeps for a finished row);
- `merged-batch`: the merged batch cache itself (`_merge_caches`);
- `segmented-prefill`: the cache the generator hands out for a finished row whose prompt
  was prefilled in steps smaller than the prompt (our segmented prefill, where installed),
  compared with the prompt run alone through `generate_step`.
Trim takes 2 tokens off and feeds them again; where `can_trim_prompt_cache` says no (SSM
caches, upstream), the row records that the cache declined, which is a pass.
"""

from __future__ import annotations

from typing import Any

from mlxcompat.checks.compare import Comparison, compare_rows
from mlxcompat.checks.parity import parity_rows
from mlxcompat.checks.spec import Case, CheckSpec, Context, Selection, guarded, wanted
from mlxcompat.errors import SkipCheck
from mlxcompat.models import build_model
from mlxcompat.records.rows import ResultRow
from mlxcompat.registry import Registry

SCENARIOS = ("extracted-row", "merged-batch", "segmented-prefill")
STEPS = 4
TRIM = 2
SEGMENT_PROMPTS = (150, 97, 41)  # none a multiple of the step
SEGMENT_STEP = 32


class _Pairs:
    """Decodes after a round trip beside the decodes they must equal, row by row."""

    def __init__(self) -> None:
        self.tokens: list[Any] = []
        self.scores: list[Any] = []
        self.want_tokens: list[Any] = []
        self.want_scores: list[Any] = []
        self.names: list[str] = []
        self.notes: list[str] = []

    def add(self, name: str, got: Any, want: Any) -> None:
        self.tokens += got[0]
        self.scores += got[1]
        self.want_tokens += want[0]
        self.want_scores += want[1]
        self.names += [f"{name}[{i}]" for i in range(len(got[0]))]

    def compare(self, tolerance: float) -> Comparison:
        found = compare_rows(self.scores, self.want_scores, self.tokens, self.want_tokens,
                             tolerance)
        found.metrics.update(compared=self.names, notes=sorted(set(self.notes)))
        if self.notes:
            found.detail += "; " + "; ".join(sorted(set(self.notes)))
        return found


def _round_trips(net: Any, cache: list[Any], histories: list[list[int]], feed: list[int],
                 pairs: _Pairs, want: Any = None, label: str = "") -> None:
    """Decode `cache` after save/load and after trim + re-feed; each against `want` (by
    default the same cache decoded without a round trip)."""
    from mlxcompat.drivers import lm_prompt_cache as pc

    if want is None:
        want = pc.decode(net, pc.duplicate(cache), feed, STEPS)
    else:
        pairs.add(f"as-handed-out{label}", pc.decode(net, pc.duplicate(cache), feed, STEPS),
                  want)
    pairs.add(f"save-load{label}",
              pc.decode(net, pc.saved_and_loaded(pc.duplicate(cache)), feed, STEPS), want)
    if len(histories) != 1:
        pairs.notes.append("trim: not tried on a batch (servers trim a row's cache)")
        return
    trimmed, why = pc.trimmed_and_refed(net, pc.duplicate(cache), histories[0], TRIM)
    if trimmed is None:
        pairs.notes.append(f"trim: {why}")
    else:
        pairs.add(f"trim{label}", pc.decode(net, trimmed, feed, STEPS), want)


def _extracted_and_merged(net: Any, scenario: str, tolerance: float) -> Comparison:
    from mlxcompat.drivers.lm_cache import decode_steps, extract_rows, merge_rows, prefill_alone

    prompts = [r.prompt for r in parity_rows("fresh", 0)]
    singles = [prefill_alone(net, p) for p in prompts]
    firsts = [t for _, t in singles]
    batch = merge_rows([c for c, _ in singles])
    pairs = _Pairs()
    if scenario == "merged-batch":
        _round_trips(net, batch, prompts, firsts, pairs)
        return pairs.compare(tolerance)
    warm, _ = decode_steps(net, batch, firsts, 2)
    for i, row in enumerate(extract_rows(batch, len(prompts))):
        history = [*prompts[i], firsts[i], warm[i][0]]
        _round_trips(net, row, [history], [warm[i][1]], pairs, label=f"-row{i}")
    return pairs.compare(tolerance)


def _holds_last_token() -> bool:
    """Does a finished row's cache already hold its last generated token? Asked of the
    installed generator with a tiny attention model (a KV cache counts its tokens)."""
    from mlxcompat.drivers.lm_rows import Row
    from mlxcompat.drivers.lm_runner import run_batched
    from mlxcompat.models.lm import build_lm

    if not _HOLDS:
        out = run_batched(build_lm("llama", 0), [Row([5, 6, 7], 2)])[0]
        if out.cache is None:
            raise SkipCheck("this BatchGenerator hands out no cache for a finished row")
        _HOLDS.append(int(out.cache[0].offset) == 3 + len(out.tokens))
    return _HOLDS[0]


_HOLDS: list[bool] = []


def _segmented(net: Any, tolerance: float) -> Comparison:
    import numpy as np

    from mlxcompat.drivers.lm_rows import Row
    from mlxcompat.drivers.lm_runner import run_batched, run_single

    rng = np.random.default_rng(3)
    rows = [Row([int(t) for t in rng.integers(1, 128, size=n)], 2) for n in SEGMENT_PROMPTS]
    holds = _holds_last_token()
    batched = run_batched(net, rows, prefill_step_size=SEGMENT_STEP)
    if any(b.cache is None for b in batched):
        raise SkipCheck("this BatchGenerator hands out no cache for a finished row")
    pairs = _Pairs()
    pairs.notes.append(f"a finished row's cache {'holds' if holds else 'lacks'} its last token")
    for i, (row, out) in enumerate(zip(rows, batched, strict=True)):
        alone = run_single(net, Row(row.prompt, 2 + 1 + STEPS))
        fed = len(out.tokens) + (1 if holds else 0)  # tokens of the alone run before `feed`
        history = row.prompt + alone.tokens[:fed - 1]
        want = ([alone.tokens[fed:fed + STEPS]], [alone.logprobs[fed:fed + STEPS]])
        _round_trips(net, list(out.cache), [history], [alone.tokens[fed - 1]], pairs,
                     want=want, label=f"-row{i}")
    return pairs.compare(tolerance)


def run_prompt_cache(case: Case, ctx: Context, seed: int = 0) -> ResultRow:
    def body() -> ResultRow:
        net = build_model(ctx.registry.models[case.model], seed)
        if case.scenario == "segmented-prefill":
            found = _segmented(net, ctx.tolerance)
        else:
            found = _extracted_and_merged(net, case.scenario, ctx.tolerance)
        return case.row(ctx.subject, found.verdict, **found.fields())

    return guarded(case, ctx.subject, body)


def prompt_cache_cases(selection: Selection) -> list[Case]:
    return wanted(selection, [Case("prompt-cache", model=m.name, scenario=s)
                              for m in selection.models_of("lm") for s in SCENARIOS])


def _values(registry: Registry) -> dict[str, tuple[str, ...] | None]:
    return {"scenario": SCENARIOS}


SPEC = CheckSpec("prompt-cache", ("model", "scenario", "subject"), prompt_cache_cases,
                 run_prompt_cache, _values, default=False)
