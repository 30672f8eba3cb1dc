"""The bounded workload the `server` check sends to a real server, and its replay alone.

Three phases, each bounded in requests and tokens (about 20 requests in all):
- at once: requests sharing a prefix (unequal suffixes and lengths, so rows finish on
  different steps) and prompts of a few hundred tokens (longer than the prefill step, which
  divides neither);
- multi-turn: two conversations, three turns each, one request at a time; the second turn
  extends the first's prompt and completion (a cache hit), the third edits the second
  turn's message, so the cached prompt is longer than the shared prefix (the server trims
  or refetches);
- a streamed request cancelled after a few tokens, then the same prompt again and another
  request, one after the other;
- seeded sampling (temperature 1), one request after the other, once the batches are done:
  sent amid the batches, 0.31.3 gave other tokens than the same seeded request alone in
  about one fresh server of three, for every subject `none` included (not reduced further;
  0.32.2 never did), which would make the row's verdict depend on timing.
The replay sends every request alone, one after another, to a server with concurrency 1
and the prompt cache off; a cancelled stream is compared on the tokens it received.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from mlxcompat.drivers.client import Completion, Poster
from mlxcompat.models.saved import VOCAB, to_text

SCENARIOS = ("shared-prefix", "multi-turn", "cancel", "long-prompt", "seeded")
PREFILL_STEP = 64  # divides no long prompt (300 = 4*64+44, 233 = 3*64+41, 97 = 64+33)
LONG = (300, 233, 97)  # longer than the prefill step
CANCEL_AFTER = 3
BLOCKER_TOKENS = 768
HEAD_START_S = 0.05  # the blocker is being prefilled when the group arrives
# ... unless the blocker is answered sooner: a fixed 50 ms head start outlasted the whole
# blocker on the H200 (29-38 ms), so the group was sent to an idle server and nothing made
# it queue. The head start is at most this share of the blocker's time alone, measured on
# the same server first (its content never changes, only when the group is sent). A busy
# machine's client threads woke up to 190 ms late (9% of the committed CPU groups looked
# sent after their blocker's prefill), so the server is stopped while the group is sent
# (`_together`), and the servers run niced below it (`mlxcompat.serve`). A run with a group
# let in less than `MIN_QUEUED_S` before its blocker's answer is served again by a fresh
# pair of servers, up to `checks.server.QUEUE_RETRIES` times (each once no other cell times
# its rounds), then fails its scenario.
HEAD_START_SHARE = 0.4
SEND_S = 0.01  # after the group's threads began to send, before the server is continued
MIN_QUEUED_S = 0.005  # sent later than this before the blocker's answer: its prefill was done
# The blocker timed alone, twice, with tokens of its own (no prefix of another's): once, a
# slow answer (a first long prefill, a moment of a busy machine) gave a head start near the
# whole of a later blocker. 3-4% of a full run's server runs met an idle server and were
# served again, and one had all four tries fail that way (mlx-lm-0.31.2 llama, 2026-12-07).
TIMING_GROUPS = (3, 4)
GROUP = 3  # requests sent together (and the blocker): within the prompt concurrency, 4
# The server loads a model at its first request for it. Were that the blocker, a group sent
# during the load would be prefilled with it, 740-odd tokens of padding apiece, and on a slow
# machine only: 0.31.1's qwen3_5 then drifted (Δ 0.044) for every subject but ours, where a
# fast one passed. So a request of the blocker's first tokens loads the model first; it is
# not compared, and its cache can lend only those tokens, to the blocker.
WARM_TOKENS = 8


@dataclass
class Sent:
    """One request of the workload and what the server under test returned."""

    scenario: str
    name: str
    body: dict[str, Any]
    got: Completion
    cancelled: bool = False
    queued_s: float | None = None  # sent in a group: how long before its blocker's answer

    @property
    def idle(self) -> bool:
        """Sent in a group that reached the server too late to queue behind its blocker."""
        return self.queued_s is not None and self.queued_s < MIN_QUEUED_S


@dataclass
class Workload:
    sent: list[Sent] = field(default_factory=list)
    seconds: float = 0.0
    head_start_s: float = HEAD_START_S


def _body(prompt: list[int], max_tokens: int, logprobs: bool, **sampling: Any) -> dict:
    body = {"prompt": to_text(prompt), "max_tokens": max_tokens,
            "temperature": sampling.pop("temperature", 0.0), **sampling}
    if logprobs:
        body["logprobs"] = True
    return body


def _draw(rng: np.random.Generator, n: int) -> list[int]:
    return [int(t) for t in rng.integers(0, VOCAB, size=n)]


def _at_once(rng: np.random.Generator) -> list[list[tuple[str, str, dict]]]:
    """Groups of at most `GROUP` requests (the prompt concurrency), each sent together."""
    prefix = _draw(rng, 24)
    shared = [("shared-prefix", f"shared-{i}",
               _body(prefix + _draw(rng, tail), new, logprobs=i % 2 == 0))
              for i, (tail, new) in enumerate(zip((2, 5, 9, 3, 12, 7), (6, 9, 4, 11, 8, 5),
                                                  strict=True))]
    long = [("long-prompt", f"long-{n}", _body(_draw(rng, n), 6, logprobs=True)) for n in LONG]
    return [shared[:3], shared[3:], long]


def _blocker(group: int = 0) -> list[int]:
    """The blocker of group `group`: its own tokens, from the first on, so that no later
    blocker is served from the prompt cache (the same blocker three times was a cache hit
    from the second group on: 767 of 768 tokens, answered in 12 ms on 0.32.2's llama, before
    its group was sent)."""
    return [(i + 31 * group) % VOCAB for i in range(BLOCKER_TOKENS)]


def _seeded(rng: np.random.Generator) -> list[tuple[str, str, dict]]:
    return [("seeded", f"seed-{seed}", _body(_draw(rng, 10 + i), 8, logprobs=True,
                                             temperature=1.0, seed=seed))
            for i, seed in enumerate((5, 9))]


def _conversations(post: Callable[[dict], Completion], rng: np.random.Generator) -> list[Sent]:
    """Two conversations, turn by turn, their requests one after the other (batching is the
    other scenarios' business: sent together, whether two turns shared a prefill depended
    on when the server stored the first turn's cache, and so did the verdict under Mamba
    v1's upstream drift); the first asks for logprobs, the second not.

    No pause between turns: mlx_lm.server stores a finished row's cache in its generation
    thread right after ending the response, and the same thread looks the next request's
    cache up (0.29.1-0.32.2; 0.28's server answers one request at a time), so the next turn
    always finds it. The rows' `cached_tokens` show the hits."""
    firsts = [_draw(rng, 16), _draw(rng, 19)]
    seconds = [_draw(rng, 5), _draw(rng, 3)]
    thirds = [_draw(rng, 8), _draw(rng, 6)]
    for k in range(2):
        thirds[k][0] = (seconds[k][0] + 1) % VOCAB  # the edit differs from its first token
    histories = [list(f) for f in firsts]
    sent: list[Sent] = []
    for turn, messages in ((1, [[], []]), (2, seconds), (3, thirds)):
        bodies = [_body(h + m, 6, logprobs=k == 0)
                  for k, (h, m) in enumerate(zip(histories, messages, strict=True))]
        got = [post(b) for b in bodies]  # one after the other: the prompt cache, not batching
        sent += _record("multi-turn", [f"conv{k}-turn{turn}" for k in range(2)], bodies, got)
        if turn == 1:
            histories = [h + g.tokens for h, g in zip(histories, got[:2], strict=True)]
    return sent


def head_start(post: Callable[[dict], Completion]) -> float:
    """The group's delay after its blocker: `HEAD_START_S`, or less where a blocker alone
    (timed here, not compared; the faster of `TIMING_GROUPS`) is answered in under
    `HEAD_START_S / HEAD_START_SHARE`."""
    timed = [post(_body(_blocker(group), 2, logprobs=True)) for group in TIMING_GROUPS]
    seconds = [t.seconds for t in timed if not t.error and t.seconds > 0]
    if not seconds:
        return HEAD_START_S
    return min(HEAD_START_S, HEAD_START_SHARE * min(seconds))


class Hold(Protocol):
    """The server under test, stopped and continued (`Server.pause` / `resume`)."""

    def pause(self) -> None: ...

    def resume(self) -> None: ...


def _together(post: Callable[[dict], Completion], bodies: list[dict], group: int,
              delay: float = HEAD_START_S, hold: Hold | None = None) -> list[Completion]:
    """Send `bodies` at once while the server is busy prefilling a long blocker (appended to
    `bodies`; the caller records it too), `delay` after it, so that they queue up and the
    server prefills them together: without it, whether two requests share a prefill depends
    on thread timing, and so would the verdict. A group stays within the prompt concurrency
    (`GROUP`). With `hold`, the server is stopped from the end of the head start until every
    request of the group has been sent, so a client whose threads wake late (a busy machine:
    up to 190 ms here) cannot let the blocker finish first; the blocker's answer then still
    comes after the group was let in (`queued`), unless it came before the stop."""
    bodies.append(_body(_blocker(group), 2, logprobs=True))
    order = [len(bodies) - 1, *range(len(bodies) - 1)]
    gate = threading.Barrier(len(bodies) - 1)
    sending = [threading.Event() for _ in bodies]

    def send(i: int) -> Completion:
        if i != order[0]:
            gate.wait(timeout=30)
        sending[i].set()
        return post(bodies[i])

    with ThreadPoolExecutor(max_workers=len(bodies)) as pool:
        first = pool.submit(send, order[0])
        time.sleep(delay)
        held = hold if hold is not None and not first.done() else None
        if held is not None:
            held.pause()
        try:
            rest = {i: pool.submit(send, i) for i in order[1:]}
            if held is not None:
                for i in order[1:]:
                    sending[i].wait(timeout=30)
                time.sleep(SEND_S)  # their bytes reach the server's socket while it is stopped
        finally:
            if held is not None:
                held.resume()
        let_in = time.perf_counter()
        found = {order[0]: first.result(), **{i: f.result() for i, f in rest.items()}}
    if held is not None:
        for i in order[1:]:  # from the server's view they arrived when it was continued
            found[i].began = max(found[i].began, let_in)
    return [found[i] for i in range(len(bodies))]


def queued(got: list[Completion]) -> float | None:
    """How long before the blocker (the last) was answered its group's last request was
    sent; negative: the group reached an idle server. None where a request failed (the
    failure is the row's verdict then)."""
    *group, blocker = got
    if any(g.error for g in got) or not group:
        return None
    return blocker.began + blocker.seconds - max(g.began for g in group)


def _record(scenario: str, names: list[str], bodies: list[dict], got: list[Completion],
            group: int = 0, queued_s: float | None = None) -> list[Sent]:
    names = names + [f"{scenario}-blocker-{group}"] * (len(bodies) - len(names))
    return [Sent(scenario, n, b, g, queued_s=queued_s)
            for n, b, g in zip(names, bodies, got, strict=True)]


def run_workload(poster: Poster, model: str, seed: int = 0, hold: Hold | None = None
                 ) -> Workload:
    """Send the workload for `model` (a folder the server loads) to the server under test;
    bounded: every request has max_tokens and a timeout, and the phases run in order."""
    rng = np.random.default_rng(seed)
    began = time.perf_counter()

    def post(body: dict) -> Completion:
        body["model"] = model
        return poster(body)

    out = Workload()
    post(_body(_blocker()[:WARM_TOKENS], 2, logprobs=False))  # loads the model (see WARM_TOKENS)
    out.head_start_s = head_start(post)
    for k, group in enumerate(_at_once(rng)):
        bodies = [item[2] for item in group]
        got = _together(post, bodies, k, out.head_start_s, hold)
        out.sent += _record(group[0][0], [item[1] for item in group], bodies, got, k,
                            queued(got))
    out.sent += _conversations(post, rng)
    prompt = _draw(rng, 20)
    body = {**_body(prompt, 40, logprobs=False), "model": model}
    cut = poster.stream(body, CANCEL_AFTER)
    out.sent.append(Sent("cancel", "cancelled-stream", body, cut, cancelled=True))
    again = [_body(prompt, 8, logprobs=True), _body(_draw(rng, 14), 7, logprobs=True)]
    got = [post(b) for b in again]  # what the cancel left behind, not batching (see above)
    out.sent += _record("cancel", ["after-cancel-0", "after-cancel-1"], again, got)
    seeded = _seeded(rng)  # last, once the batches are done (see the module docstring)
    out.sent += [Sent(sc, n, b, post(b)) for sc, n, b in seeded]
    out.seconds = time.perf_counter() - began
    return out


def replay_alone(poster: Poster, workload: Workload) -> tuple[list[Completion], float]:
    """Every request of the workload, alone and in order (a cancelled stream in full)."""
    began = time.perf_counter()
    alone = [poster(s.body) for s in workload.sent]
    return alone, time.perf_counter() - began
