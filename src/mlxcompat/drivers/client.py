"""A real HTTP client (httpx) for `mlx_lm.server`'s OpenAI-style completions endpoint: one
request, a streamed one cancelled part-way, and a sender that stops once the server is gone.
Logprobs come back in two shapes (0.29.1: `tokens` + `token_logprobs`; later: `content` of
`{id, logprob}`), both read here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

REQUEST_TIMEOUT_S = 15.0  # a tiny model answers in well under a second, even on a busy CPU
# On a GPU backend a request's first use of a kernel compiles it first (mlx's CUDA backend
# JIT-compiles with NVRTC): the first seeded request, the sampler's first use, outlasted 15 s
# on an H200 with four servers compiling at once (reports/raw/mlx-lm-0.32.2@cuda.json of
# ebe7633, none and mlxcompat alike). A hang still ends, two minutes later.
GPU_REQUEST_TIMEOUT_S = 120.0


def request_timeout_s(device: str) -> float:
    return REQUEST_TIMEOUT_S if device == "cpu" else GPU_REQUEST_TIMEOUT_S


# Errors after which a server is taken as gone: later requests are not sent (0.31.3 never
# answers once its generation thread died; 0.32.2 answers 404 "generation thread died").
GONE = ("Timeout", "ConnectError", "RemoteProtocolError", "generation thread died")
WATCH_S = 0.05  # how often a request in flight looks at the server's death


class Poster:
    """`complete` for one server that stops sending once the server is gone (a workload
    against a dead server ends in seconds, not in one timeout per request). With `death`
    (`Server.death`) a request in flight ends as soon as the server can no longer answer
    it, naming why, instead of at its timeout."""

    def __init__(self, client: Any, url: str, to_ids: Any,
                 timeout_s: float = REQUEST_TIMEOUT_S,
                 death: Callable[[], str] | None = None) -> None:
        self.client, self.url, self.to_ids = client, url, to_ids
        self.timeout_s = timeout_s
        self.death = death
        self.gone = ""

    def __call__(self, body: dict[str, Any]) -> Completion:
        return self._send(lambda: complete(self.client, self.url, body, self.to_ids,
                                           self.timeout_s))

    def stream(self, body: dict[str, Any], after: int) -> Completion:
        return self._send(lambda: stream_then_cancel(self.client, self.url, body, after,
                                                     self.to_ids, self.timeout_s))

    def _send(self, request: Callable[[], Completion]) -> Completion:
        if self.gone:
            return Completion([], None, 0.0, error=f"not sent: the server is gone ({self.gone})")
        began = time.perf_counter()
        got = request() if self.death is None else self._watched(request, self.death)
        got.began = began
        if not self.gone and any(mark in got.error for mark in GONE):
            self.gone = got.error[:200]
        return got

    def _watched(self, request: Callable[[], Completion], death: Callable[[], str]
                 ) -> Completion:
        """The request in a thread of its own, watched for the server's death (the thread
        ends when the server is stopped, or at its timeout)."""
        import threading

        began = time.perf_counter()
        found: list[Completion] = []
        sender = threading.Thread(target=lambda: found.append(request()), daemon=True)
        sender.start()
        while sender.is_alive():
            sender.join(WATCH_S)
            why = "" if found else death()
            if why:
                self.gone = why[:200]
                return Completion([], None, time.perf_counter() - began,
                                  error=f"the server is gone ({why[:300]})")
        return found[0]


@dataclass
class Completion:
    """What one request got back: token ids, their logprobs (None when not asked or not
    returned), the cached prompt tokens the server reports, and how long it took."""

    tokens: list[int]
    logprobs: list[float] | None
    seconds: float
    cached_tokens: int | None = None
    error: str = ""
    finish_reason: str | None = None
    began: float = 0.0  # time.perf_counter() when it was sent (Poster), to order requests


def _logprobs(choice: dict[str, Any]) -> tuple[list[int] | None, list[float] | None]:
    found = choice.get("logprobs") or {}
    if isinstance(found.get("content"), list):
        content = found["content"]
        return [int(c["id"]) for c in content], [float(c["logprob"]) for c in content]
    if found.get("token_logprobs") is not None:
        tokens = found.get("tokens")
        return (None if tokens is None else [int(t) for t in tokens],
                [float(x) for x in found["token_logprobs"]])
    return None, None


def complete(client: Any, url: str, body: dict[str, Any], to_ids: Any,
             timeout_s: float = REQUEST_TIMEOUT_S) -> Completion:
    """POST /v1/completions; token ids from the logprobs where returned, else from the text
    (one character per token)."""
    began = time.perf_counter()
    try:
        response = client.post(f"{url}/v1/completions", json=body, timeout=timeout_s)
    except Exception as exc:
        return Completion([], None, time.perf_counter() - began,
                          error=f"{type(exc).__name__}: {exc}")
    took = time.perf_counter() - began
    if response.status_code != 200:
        return Completion([], None, took, error=f"HTTP {response.status_code}: "
                          f"{response.text[:300]}")
    data = response.json()
    choice = data["choices"][0]
    from_text = to_ids(choice.get("text", ""))
    ids, logprobs = _logprobs(choice)
    if ids is not None and ids != from_text:
        return Completion(from_text, logprobs, took, error=f"logprob ids {ids} differ from "
                          f"the text's {from_text}")
    details = (data.get("usage") or {}).get("prompt_tokens_details") or {}
    return Completion(from_text, logprobs if body.get("logprobs") else None, took,
                      details.get("cached_tokens"), finish_reason=choice.get("finish_reason"))


def stream_then_cancel(client: Any, url: str, body: dict[str, Any], after: int,
                       to_ids: Any, timeout_s: float = REQUEST_TIMEOUT_S) -> Completion:
    """Stream a completion and close the connection after `after` tokens (a client that
    goes away mid-stream); returns the tokens received."""
    began = time.perf_counter()
    tokens: list[int] = []
    try:
        with client.stream("POST", f"{url}/v1/completions", json={**body, "stream": True},
                           timeout=timeout_s) as response:
            for line in response.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                tokens += to_ids(json.loads(line[6:])["choices"][0].get("text", ""))
                if len(tokens) >= after:
                    break
    except Exception as exc:
        return Completion(tokens, None, time.perf_counter() - began,
                          error=f"{type(exc).__name__}: {exc}")
    return Completion(tokens[:after], None, time.perf_counter() - began,
                      finish_reason="cancelled")
