"""A real `mlx_lm.server` on 127.0.0.1, started through `mlxcompat.serve` (the subject's entry
points first), and a real HTTP client (httpx) for its OpenAI-style completions endpoint.

What the server can be told comes from the installed server itself (`server_flags`: its own
`--help`), never from a version string: 0.29.1 has no `--decode-concurrency`,
`--prompt-concurrency`, `--prefill-step-size` or `--prompt-cache-size`; 0.31.3 and 0.32.2 do.
Logprobs come back in two shapes (0.29.1: `tokens` + `token_logprobs`; later: `content` of
`{id, logprob}`), both read here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from mlxcompat.drivers import forked

START_TIMEOUT_S = 120.0
REQUEST_TIMEOUT_S = 15.0  # a tiny model answers in well under a second, even on a busy CPU
# On a GPU backend a request's first use of a kernel compiles it first (mlx's CUDA backend
# JIT-compiles with NVRTC): the first seeded request, the sampler's first use, outlasted 15 s
# on an H200 with four servers compiling at once (reports/raw/mlx-lm-0.32.2@cuda.json of
# ebe7633, none and mlxcompat alike). A hang still ends, two minutes later.
GPU_REQUEST_TIMEOUT_S = 120.0


def request_timeout_s(device: str) -> float:
    return REQUEST_TIMEOUT_S if device == "cpu" else GPU_REQUEST_TIMEOUT_S


@cache
def server_flags() -> frozenset[str]:
    """The options the installed `mlx_lm.server` accepts, read from its own `--help`."""
    import importlib

    server = importlib.import_module("mlx_lm.server")
    out = io.StringIO()
    argv = sys.argv
    sys.argv = ["mlx_lm.server", "--help"]
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            server.main()
    finally:
        sys.argv = argv
    return frozenset(re.findall(r"(--[a-z][a-z0-9-]*)", out.getvalue()))


def turn_prompt_cache_off(server: Any) -> None:
    """Make the server module's prompt cache miss on every request, in either of its shapes:
    the batching server's `LRUPromptCache` (0.28.4+: its nearest-cache fetch finds nothing) or
    the one-request-at-a-time server of 0.28.0-0.28.3 (`APIHandler.get_prompt_cache`: the
    handler's one cache is reset for every prompt, as on a change of model)."""
    if hasattr(server, "LRUPromptCache"):
        def fetch_nearest_cache(self: Any, model: Any, tokens: Any) -> tuple[None, Any]:
            return None, tokens

        server.LRUPromptCache.fetch_nearest_cache = fetch_nearest_cache
        return
    handler = getattr(server, "APIHandler", None)
    if handler is None or not hasattr(handler, "get_prompt_cache"):
        raise RuntimeError("this mlx_lm.server has neither LRUPromptCache nor "
                           "APIHandler.get_prompt_cache: its prompt cache cannot be turned off")

    def get_prompt_cache(self: Any, prompt: Any) -> Any:
        self.reset_prompt_cache(prompt)
        return prompt

    handler.get_prompt_cache = get_prompt_cache


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


ACCESS_LOG = re.compile(r"^\S+ - \S+ \[[^\]]*\] ")  # http.server's line per request


def _raised(traceback: list[str]) -> str:
    """The exception line of a traceback's lines ('' until printed). An unraisable error
    printed in the middle of it (a `__del__` run by the garbage collector while the thread's
    traceback is being written: "Exception ignored in: …" and its own traceback) is skipped,
    and so is a request's access-log line another thread printed meanwhile (requests let
    in at once, as the server check's groups are, while the generation thread dies)."""
    ignored = False
    for line in traceback:
        if line[:1] in (" ", "\t", "") or line.startswith(
                ("Traceback", "During handling", "The above")) or ACCESS_LOG.match(line):
            continue
        if line.startswith("Exception ignored in"):
            ignored = True
        elif ignored:
            ignored = False  # the ignored error's own exception line
        else:
            return line
    return ""


@dataclass
class Server:
    """One server process serving one model folder; `stop()` ends it (and only it)."""

    model: Path
    entry_points: dict[str, str]
    flags: dict[str, Any] = field(default_factory=dict)
    no_prompt_cache: bool = False
    device: str = "cpu"
    port: int = 0
    proc: Any = None
    log: deque[str] = field(default_factory=lambda: deque(maxlen=400))
    applied: dict[str, str] = field(default_factory=dict)
    started_s: float = 0.0
    dying: list[str] = field(default_factory=list)  # the generation thread's traceback

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        import threading

        self.port = free_port()
        argv = [sys.executable, "-m", "mlxcompat.serve", "--device", self.device]
        for role, point in self.entry_points.items():
            argv += ["--apply", f"{role}={point}"]
        if self.no_prompt_cache:
            argv.append("--no-prompt-cache")
        argv += ["--", "--model", str(self.model), "--host", "127.0.0.1", "--port",
                 str(self.port), "--log-level", "WARNING"]
        for flag, value in self.flags.items():
            argv += [flag, str(value)]
        began = time.perf_counter()
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLXCOMPAT_SERVE_PARENT": str(os.getpid())}
        if forked.available():  # warm: the cell's fork server has done the slow imports
            self.proc = forked.ForkedServer(argv[3:], env)
        else:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, env=env)
        threading.Thread(target=self._read, daemon=True).start()
        self._wait_ready()
        self.started_s = time.perf_counter() - began
        return self

    def _read(self) -> None:
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            if line.startswith("[mlxcompat-serve] "):
                self.applied = json.loads(line.removeprefix("[mlxcompat-serve] "))["applied"]
            elif line.strip():
                if 0 < len(self.dying) < 200 or (line.startswith("Exception in thread")
                                                 and "(_generate)" in line):
                    self.dying.append(line)
                self.log.append(line)

    def death(self) -> str:
        """Why the server can answer no more ('' while it can): its process ended, or its
        generation thread (`_generate`) raised, after which 0.28.4-0.31.3 leave every
        request unanswered. The traceback's last line names the exception; '' until it
        has been read."""
        if self.proc is not None and self.proc.poll() is not None:
            return f"the server exited with {self.proc.returncode}"
        last = _raised(self.dying[1:])
        return f"its generation thread died: {last}" if last else ""

    def _wait_ready(self) -> None:
        import httpx

        deadline = time.monotonic() + START_TIMEOUT_S
        with httpx.Client(timeout=2) as client:  # one client: each new one loads the CA store
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the server exited with {self.proc.returncode}: "
                                       + " | ".join(list(self.log)[-6:]))
                with contextlib.suppress(httpx.HTTPError):
                    if client.get(f"{self.url}/health").status_code == 200:
                        return
                time.sleep(0.2)
        self.stop()
        raise RuntimeError(f"the server did not answer /health in {START_TIMEOUT_S:.0f}s")

    def pause(self) -> None:
        """Stop the server's process (SIGSTOP) while nobody talks to it: an idle server is
        not idle everywhere (0.28.4's and 0.29.1's generation thread polls its queue without
        waiting, a core's worth), and that CPU is the other server's or subject's."""
        if self.proc is not None:
            self.proc.send_signal(signal.SIGSTOP)  # Popen's and ForkedServer's: none once ended

    def resume(self) -> None:
        if self.proc is not None:
            self.proc.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.resume()  # a stopped process acts on SIGTERM only once continued
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=15)

    def __enter__(self) -> Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


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
