"""A real `mlx_lm.server` on 127.0.0.1, started through `mlxcompat.serve` (the subject's entry
points first); `drivers/client.py` talks to it.

What the server can be told comes from the installed server itself (`server_flags`: its own
`--help`), never from a version string: 0.29.1 has no `--decode-concurrency`,
`--prompt-concurrency`, `--prefill-step-size` or `--prompt-cache-size`; 0.31.3 and 0.32.2 do.
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
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from mlxcompat.drivers import forked

START_TIMEOUT_S = 120.0
PORT_TRIES = 3  # a server whose port another process took first starts again on another
BIND_FAILED = "Address already in use"  # the end of the OSError line (errno 98 / macOS 48)


class PortTaken(RuntimeError):
    """The server could not bind the port picked for it: another process had taken it."""


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
    listening: int = 0  # the port its process said it listens on (`serve._say_listening`)
    started_s: float = 0.0
    dying: list[str] = field(default_factory=list)  # the generation thread's traceback
    _reader: Any = None  # the thread reading its output

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Server:
        began = time.perf_counter()
        for tries_left in reversed(range(PORT_TRIES)):
            try:
                self._launch()
                break
            except PortTaken:
                if not tries_left:
                    raise
        self.started_s = time.perf_counter() - began
        return self

    def _launch(self) -> None:
        import threading

        self.port, self.listening = free_port(), 0
        self.log.clear()
        self.dying.clear()
        argv = [sys.executable, "-m", "mlxcompat.serve", "--device", self.device]
        for role, point in self.entry_points.items():
            argv += ["--apply", f"{role}={point}"]
        if self.no_prompt_cache:
            argv.append("--no-prompt-cache")
        argv += ["--", "--model", str(self.model), "--host", "127.0.0.1", "--port",
                 str(self.port), "--log-level", "WARNING"]
        for flag, value in self.flags.items():
            argv += [flag, str(value)]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "MLXCOMPAT_SERVE_PARENT": str(os.getpid())}
        if forked.available():  # warm: the cell's fork server has done the slow imports
            self.proc = forked.ForkedServer(argv[3:], env)
        else:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE,
                                         stderr=subprocess.STDOUT, text=True, env=env)
        self._reader = threading.Thread(target=self._read, args=(self.proc,), daemon=True)
        self._reader.start()
        self._wait_ready()

    def _read(self, proc: Any = None) -> None:
        """Read `proc`'s output (this server's process by default) into the log."""
        proc = proc or self.proc
        for line in proc.stdout:
            if proc is not self.proc:  # started again on another port: not this one's log
                break
            line = line.rstrip("\n")
            if line.startswith("[mlxcompat-serve] "):
                said = json.loads(line.removeprefix("[mlxcompat-serve] "))
                if "applied" in said:
                    self.applied = said["applied"]
                if "listening" in said:
                    self.listening = int(said["listening"])
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
                ended = self.proc.poll() is not None
                if ended and self._reader is not None:
                    self._reader.join(timeout=10)  # its last lines (0.28.0-0.28.3 exit)
                if any(line.startswith("OSError") and line.endswith(BIND_FAILED)
                       for line in list(self.log)[-3:]):
                    self.stop()  # 0.28.4+ live on when their HTTP thread cannot bind
                    raise PortTaken(f"port {self.port} was taken before the server bound it")
                if ended:
                    raise RuntimeError(f"the server exited with {self.proc.returncode}: "
                                       + " | ".join(list(self.log)[-6:]))
                if self.listening == self.port:  # its own socket, not another's
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
