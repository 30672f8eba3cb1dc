"""Keep padding out of recurrent state: segmented prefill for batches with SSM caches.

BatchGenerator pads the prompts of a batch to one width. Attention layers mask the padding,
but a recurrent layer folds every column into its conv window and state: Mamba v1 never reads
a mask at all, and other SSM layers have shipped with masks that miss some columns
(a mask only on the first chunk, a state decayed over padded steps, a conv window that
ignores row lengths, a mask precedence that drops the lengths). Instead of fixing each mask,
the prefill runs the model over column segments in which the set of real rows is constant,
with the SSM caches' masks switched off, and afterwards puts back the state of every row for
which that segment was padding. A row's state is then exactly what a single run would have.

Attention caches see every column as before (their own masks handle padding), so hybrid
models are exact too. Decoding (one real column per row) is never touched.
"""

from __future__ import annotations

import contextlib
import importlib
import itertools
from collections.abc import Iterator, Sequence
from typing import Any

import mlx.core as mx

Span = tuple[int, int]  # the real columns [start, end) of one row, in padded coordinates


def _ssm_caches(cache: Sequence[Any] | None) -> list[Any]:
    """The recurrent (ArraysCache-like) caches in a model's cache list, CacheLists opened."""
    arrays = importlib.import_module("mlx_lm.models.cache").ArraysCache
    found: list[Any] = []
    for c in cache or ():
        if isinstance(c, arrays):
            found.append(c)
        elif hasattr(c, "caches"):
            found += _ssm_caches(c.caches)
    return found


class SegmentedPrefill:
    """Stands in for the model during one prefill call of a batch generator.

    `spans[i]` are row i's real columns; columns from `end` on (the final step) go straight
    through. Every other attribute is the model's own.
    """

    def __init__(self, model: Any, spans: list[Span], end: int) -> None:
        self._model = model
        self._spans = spans
        self._end = end
        self._seen = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._model, name)

    def _cuts(self, start: int, stop: int) -> list[int]:
        inner = {x for span in self._spans for x in span if start < x < stop}
        return sorted({start, stop, *inner})

    def __call__(self, inputs: Any, cache: Any = None, **kwargs: Any) -> Any:
        start = self._seen
        width = int(inputs.shape[1])
        self._seen += width
        ssm = _ssm_caches(cache)
        padded = any(not (s <= start and start + width <= e) for s, e in self._spans)
        if start >= self._end or not ssm or not padded:
            return self._model(inputs, cache=cache, **kwargs)
        masks = [(c.__dict__.get("left_padding"), c.__dict__.get("lengths")) for c in ssm]
        for c in ssm:  # state is kept clean below; the caches' own masks would only interfere
            for name in ("left_padding", "lengths"):
                if name in c.__dict__:
                    setattr(c, name, None)
        outputs = []
        cuts = self._cuts(start, start + width)
        try:
            for a, b in itertools.pairwise(cuts):
                real = [s <= a and b <= e for s, e in self._spans]
                before = [list(c.cache) for c in ssm]
                outputs.append(self._model(inputs[:, a - start:b - start], cache=cache, **kwargs))
                if not all(real):
                    _restore(ssm, before, mx.array(real))
        finally:
            for c, (left, lengths) in zip(ssm, masks, strict=True):
                # as if the model had advanced the caches over the whole call
                if "left_padding" in c.__dict__:
                    c.left_padding = None if left is None else left - width
                if "lengths" in c.__dict__:
                    c.lengths = None if lengths is None else lengths - width
        return mx.concatenate(outputs, axis=1) if len(outputs) > 1 else outputs[0]


def _restore(ssm: list[Any], before: list[list[Any]], real: Any) -> None:
    """Rows that were padding in this segment get their previous state back (zeros where
    they had none yet: an empty slot means a zero state for these layers)."""
    for c, old in zip(ssm, before, strict=True):
        for i, new in enumerate(c.cache):
            if new is None or new is old[i]:
                continue
            previous = old[i] if old[i] is not None else mx.zeros_like(new)
            keep = real.reshape((-1,) + (1,) * (new.ndim - 1))
            c.cache[i] = mx.where(keep, new, previous.astype(new.dtype))


def _is_fresh(caches: Sequence[Any] | None) -> bool:
    """The generator's own test of "no history" (its branch decides the column layout)."""
    if caches is None:
        return True
    module = importlib.import_module("mlx_lm.models.cache")
    length = getattr(module, "cache_length", None)
    if length is not None:
        return max(length(c) for c in caches) == 0
    return all(c[0].empty() for c in caches)


def spans_of_batch(prompts: Sequence[Any]) -> tuple[list[Span], int]:
    """Real columns of a `_process_prompts` batch (uid, prompt, max_tokens[, cache, ...]).

    New prompts are left-padded and every column but the last goes through the prefill
    loop; with history the tails are right-padded and the loop ends before each row's last
    token (it is fed again by the final step).
    """
    lengths = [len(p[1]) for p in prompts]
    width = max(lengths)
    caches = [p[3] for p in prompts] if len(prompts[0]) > 3 else None
    if _is_fresh(caches):
        return [(width - n, width - 1) for n in lengths], width - 1
    return [(0, n - 1) for n in lengths], width - 1


@contextlib.contextmanager
def _segmented(owner: Any, spans: list[tuple[int, int]], end: int) -> Iterator[None]:
    """`owner.model` is the segmented proxy for the duration, whatever happens inside."""
    model = owner.model
    owner.model = SegmentedPrefill(model, spans, end)
    try:
        yield
    finally:
        owner.model = model


def family_of(model: Any) -> str:
    """A model's family: the mlx_lm.models module its class comes from (`mamba2`, …)."""
    return type(model).__module__.rsplit(".", 1)[-1]


def wrap_process_prompts(original: Any, exempt: frozenset[str] = frozenset()) -> Any:
    """`BatchGenerator._process_prompts` with the model segmented for its prefill (models
    of an `exempt` family go through unchanged)."""

    def _process_prompts(self: Any, prompts: Any) -> Any:
        if family_of(self.model) in exempt:
            return original(self, prompts)
        with _segmented(self, *spans_of_batch(prompts)):
            return original(self, prompts)

    _process_prompts.__wrapped__ = original  # type: ignore[attr-defined]
    return _process_prompts


def wrap_prompt(original: Any, exempt: frozenset[str] = frozenset()) -> Any:
    """`PromptProcessingBatch.prompt` with the model segmented: right-padded chunks whose
    rows are real over [0, len) (the last token of each prompt is fed by decoding)."""

    def prompt(self: Any, tokens: Any) -> Any:
        if not tokens or family_of(self.model) in exempt:
            return original(self, tokens)
        lengths = [len(t) for t in tokens]
        with _segmented(self, [(0, n) for n in lengths], max(lengths)):
            return original(self, tokens)

    prompt.__wrapped__ = original  # type: ignore[attr-defined]
    return prompt


def install(journal: Any, exempt: frozenset[str] = frozenset()) -> str:
    """Install the segmented prefill on the installed generator for every model but those
    of the `exempt` families (whose padded batches are exact here); returns what was
    wrapped."""
    gen = importlib.import_module("mlx_lm.generate")
    batch = getattr(gen, "PromptProcessingBatch", None)
    if batch is not None and "prompt" in vars(batch):
        journal.replace(batch, "prompt", wrap_prompt(vars(batch)["prompt"], exempt))
        return "PromptProcessingBatch.prompt"
    generator = gen.BatchGenerator
    journal.replace(generator, "_process_prompts",
                    wrap_process_prompts(vars(generator)["_process_prompts"], exempt))
    return "BatchGenerator._process_prompts"
