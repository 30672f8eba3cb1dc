"""`server`, the judging half: a served run's completions against the same requests served
alone (tokens exactly, logprobs within the tolerance where asked), one scenario at a time.
`checks/server.py` starts the servers and makes the rows."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlxcompat.checks.compare import Comparison, compare_rows
from mlxcompat.checks.server_workload import MIN_QUEUED_S, Sent
from mlxcompat.drivers.client import Completion


@dataclass
class ServerRun:
    """One model served by both servers: what was sent, got and got alone, and timings."""

    sent: list[Sent] = field(default_factory=list)
    alone: list[Completion] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    error: str = ""
    retried_after: str = ""  # why a fresh pair served it again (kernel cache, an idle group)
    head_start_s: float = 0.0  # the groups' delay after their blockers (server_workload)


def _scores(got: Completion, ref: Completion, n: int) -> tuple[list[Any], list[Any]]:
    if got.logprobs is None or ref.logprobs is None:
        return [np.zeros(0)] * n, [np.zeros(0)] * len(ref.tokens)
    return ([np.array([x]) for x in got.logprobs[:n]],
            [np.array([x]) for x in ref.logprobs])


def compare_scenario(run: ServerRun, scenario: str, tolerance: float) -> Comparison:
    """The scenario's completions against the same requests alone."""
    pairs = [(s, a) for s, a in zip(run.sent, run.alone, strict=True) if s.scenario == scenario]
    errors = [f"{s.name}: {s.got.error}" for s, _ in pairs if s.got.error] + \
             [f"{s.name} alone: {a.error}" for s, a in pairs if a.error]
    if errors:
        return Comparison("error", None, False, "request failed: " + "; ".join(errors)[:600],
                          {"requests": len(pairs)})
    idle = sorted({s.queued_s or 0.0 for s, _ in pairs if s.idle})
    if idle:  # what the scenario is for (requests batched while the server is busy) never ran
        return Comparison("error", None, False, "not queued: a group was sent "
                          f"{idle[0] * 1e3:.0f} ms before its blocker was answered (at least "
                          f"{MIN_QUEUED_S * 1e3:.0f} ms needed; head start "
                          f"{run.head_start_s * 1e3:.0f} ms), so nothing made the server batch "
                          "it", {"requests": len(pairs)})
    got_tokens, ref_tokens, got_scores, ref_scores = [], [], [], []
    for sent, ref in pairs:
        want = ref.tokens[:len(sent.got.tokens)] if sent.cancelled else ref.tokens
        mine, theirs = _scores(sent.got, ref, len(sent.got.tokens))
        got_tokens.append(sent.got.tokens)
        ref_tokens.append(want)
        got_scores.append(mine)
        ref_scores.append(theirs[:len(want)])
    found = compare_rows(got_scores, ref_scores, got_tokens, ref_tokens, tolerance)
    found.metrics.update(
        requests=[s.name for s, _ in pairs],
        with_logprobs=sum(s.got.logprobs is not None for s, _ in pairs),
        cached_tokens={s.name: s.got.cached_tokens for s, _ in pairs},
        seconds={s.name: round(s.got.seconds, 3) for s, _ in pairs})
    if any(s.queued_s is not None for s, _ in pairs):
        found.metrics.update(head_start_s=round(run.head_start_s, 4), queued_s=sorted(
            {round(s.queued_s, 4) for s, _ in pairs if s.queued_s is not None}))
    return found


def first_trouble(log: list[str]) -> list[str]:
    """The server's first error and the lines after it (later ones are its consequences)."""
    first = next((i for i, line in enumerate(log) if " ERROR " in line or "died" in line),
                 max(0, len(log) - 12))
    return log[first:first + 16]
