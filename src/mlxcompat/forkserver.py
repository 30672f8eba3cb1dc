"""A fork server for subject processes: the slow imports once per cell, not once per subject.

Starting a subject process costs ~1.3 s on a small CPU, nearly all of it importing pytest,
numpy and transformers (which mlx-lm imports, resolving some of its lazy names). This process
imports those once, then forks a child per subject, so each child starts warm. It imports
nothing of mlx: a child selects its device and imports mlx / mlx-lm itself, as a fresh
process would, so patches and streams are still its own. Linux only (macOS frameworks are
not fork-safe); elsewhere, and with MLXCOMPAT_FORK=0, the runner starts plain processes.

Protocol, one JSON object per line. Requests on stdin: {"argv": [...], "env": {...},
"out": fifo path}. Answers on stdout: {"pid": n} per request, {"exit": pid, "code": c} when a
child ends (code < 0: killed by that signal).
"""

from __future__ import annotations

import json
import os
import select
import sys
from typing import IO

PRELOAD = ("numpy", "pytest", "pytest_benchmark.plugin", "yaml", "packaging.version",
           "transformers", "transformers.utils.hub", "mlxcompat.plugin", "mlxcompat.registry",
           "mlxcompat.errors", "mlxcompat.records.cell")
# transformers resolves these lazily; mlx-lm's tokenizer_utils touches them at import (0.3 s).
LAZY_TRANSFORMERS = ("AutoTokenizer", "PreTrainedTokenizerFast", "PreTrainedTokenizerBase")


def available() -> bool:
    return (sys.platform.startswith("linux") and hasattr(os, "fork")
            and os.environ.get("MLXCOMPAT_FORK", "1") != "0")


def _child(request: dict) -> None:
    """In the forked child: become the subject process (own session, env, output) and run."""
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    os.environ.clear()
    os.environ.update(request["env"])
    for path in reversed([p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep)
                          if p]):
        sys.path.insert(0, path)
    out = os.open(request["out"], os.O_WRONLY)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    sys.stdout = os.fdopen(1, "w", buffering=1)
    sys.stderr = sys.stdout
    code = 1
    try:
        import pytest

        code = int(pytest.main(request["argv"]))
    finally:
        sys.stdout.flush()
        os._exit(code)


def _reap(answer: IO[str]) -> None:
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"exit": pid, "code": code}), file=answer, flush=True)


def serve() -> None:
    for name in PRELOAD:
        __import__(name)
    transformers = sys.modules["transformers"]
    for attr in LAZY_TRANSFORMERS:
        getattr(transformers, attr, None)
    answer = sys.stdout
    print(json.dumps({"ready": os.getpid()}), file=answer, flush=True)
    stdin = sys.stdin
    while True:
        ready, _, _ = select.select([stdin], [], [], 0.2)
        _reap(answer)
        if not ready:
            continue
        line = stdin.readline()
        if not line:
            break
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), file=answer, flush=True)
    while True:  # stdin closed: wait for the children, then go
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        code = os.waitstatus_to_exitcode(status)
        print(json.dumps({"exit": pid, "code": code}), file=answer, flush=True)


if __name__ == "__main__":
    serve()
