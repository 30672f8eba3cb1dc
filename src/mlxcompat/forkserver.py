"""A fork server for subject processes: the slow imports once per cell, not once per subject.

Starting a subject process costs ~1.3 s on a small CPU, nearly all of it importing pytest,
numpy and transformers (which mlx-lm imports, resolving some of its lazy names). This process
imports those once, then forks a child per subject, so each child starts warm. It imports
nothing of mlx: a child selects its device and imports mlx / mlx-lm itself, as a fresh
process would, so patches and streams are still its own. Linux only (macOS frameworks are
not fork-safe); elsewhere, and with MLXCOMPAT_FORK=0, the runner starts plain processes.

Protocol, one JSON object per line. Requests on stdin: {"argv": [...], "env": {...},
"out": fifo path}. Answers on stdout: {"pid": n} per request, {"exit": pid, "code": c} when a
child ends (code < 0: killed by that signal). {"close": true} ends the requests: the server
waits for its children, then exits. Stdin's end without it means the runner died (SIGKILL,
the OOM killer): the server SIGKILLs every child's session first, so no subject it forked,
frozen for another's turn or not, outlives the runner.

The subject processes it forked start their `server` check's servers through it too (most
of a server's start is the same imports): each connects to the Unix socket named in the
ready line (`MLXCOMPAT_FORK_SOCKET` in their environment), sends one request with
"serve": true (the child runs `mlxcompat.serve` with `argv`), and reads the pid and, when
the server ends, its exit on that connection. That connection's end before the server's
means its asker is gone (killed outright): the server's session is SIGKILLed, paused or not.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import signal
import socket
import sys
import tempfile
import traceback
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
    """In the forked child: become the subject process and run; never return. Whatever
    fails, the child ends here, by `os._exit`: an exception left to unwind would end a copy
    of the server through the interpreter's exit (its atexit handlers, its buffers)."""
    code = 1
    try:
        _become(request)
        module = request.get("module") or ("mlxcompat.serve" if request.get("serve") else "")
        if module:  # as `python -m MODULE ARGV` runs it
            import runpy

            sys.argv = [module, *request["argv"]]
            runpy.run_module(module, run_name="__main__", alter_sys=True)
            code = 0
        else:
            import pytest

            code = int(pytest.main(request["argv"]))
    except SystemExit as end:  # a module's `sys.exit(main())`
        code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    except BaseException:  # a server's end is its exit code; say why first
        traceback.print_exc()
    finally:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(code)


def _become(request: dict) -> None:
    """Own session, environment and output (the request's FIFO as stdout and stderr)."""
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


LIVE: set[int] = set()  # children not yet reaped; each leads its own session (`_become`)
ORPHANED: set[int] = set()  # servers killed because their asker was gone, not yet reaped


def _kill(pid: int) -> None:
    """SIGKILL a child's session, and the child itself: one forked a moment ago may not
    lead its session yet (`_become`), and its group would not be found."""
    for kill in (os.killpg, os.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            kill(pid, signal.SIGKILL)


def _kill_children() -> None:
    for pid in LIVE:
        _kill(pid)


def _reap(answer: IO[str], asked: dict[int, socket.socket]) -> bool:
    """Report every child that ended; whether any child is left."""
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        _tell(answer, asked, pid, os.waitstatus_to_exitcode(status))


def _askers(asked: dict[int, socket.socket]) -> list[socket.socket]:
    """The connections of servers whose asker may still be there."""
    return [conn for pid, conn in asked.items() if pid not in ORPHANED]


def _end_orphans(ready: list, asked: dict[int, socket.socket]) -> None:
    """SIGKILL the server of every asker whose connection ended. An asker sends nothing after
    its request, so a readable connection is its end: a subject process killed outright (the
    runner's Ctrl-C, a cell's timeout) stops none of its servers, and one it had paused
    (SIGSTOP, `Server.pause`) can never see its asker go, so it stayed stopped for good."""
    for pid, conn in list(asked.items()):
        if pid in ORPHANED or conn not in ready:
            continue
        try:
            data = conn.recv(4096)
        except OSError:
            data = b""
        if data:  # not the protocol's; ignored
            continue
        ORPHANED.add(pid)
        _kill(pid)


def _say(answer: IO[str], message: str) -> None:
    """A line to the runner. Once it is gone (its children are being killed, or it was
    interrupted before it read the ready line) nobody reads: no traceback, no exit."""
    try:
        answer.write(message)
        answer.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), answer.fileno())


def _tell(answer: IO[str], asked: dict[int, socket.socket], pid: int, code: int) -> None:
    """A child's exit to whoever asked for it: a socket client, else the runner."""
    LIVE.discard(pid)
    ORPHANED.discard(pid)
    message = json.dumps({"exit": pid, "code": code}) + "\n"
    conn = asked.pop(pid, None)
    if conn is None:
        _say(answer, message)
        return
    with contextlib.suppress(OSError):  # the asker is gone; so, soon, is its server
        conn.sendall(message.encode())
    conn.close()


def _accept(listener: socket.socket, asked: dict[int, socket.socket]) -> None:
    """One request from a subject process's socket connection: fork, answer the pid."""
    conn, _ = listener.accept()
    conn.settimeout(10)
    try:
        request = json.loads(conn.makefile("r", encoding="utf-8").readline())
    except (OSError, ValueError):
        conn.close()
        return
    pid = os.fork()
    if pid == 0:
        listener.close()
        for other in asked.values():
            other.close()
        conn.close()
        _child(request)
    asked[pid] = conn
    LIVE.add(pid)
    with contextlib.suppress(OSError):
        conn.sendall((json.dumps({"pid": pid}) + "\n").encode())


def serve() -> None:
    for name in PRELOAD:
        __import__(name)
    transformers = sys.modules["transformers"]
    for attr in LAZY_TRANSFORMERS:
        getattr(transformers, attr, None)
    folder = tempfile.mkdtemp(prefix="mlxcompat-fork-")
    try:
        _serve(sys.stdout, os.path.join(folder, "socket"))
    finally:  # a forked child never comes here: it ends by `os._exit`
        shutil.rmtree(folder, ignore_errors=True)


def _serve(answer: IO[str], path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    asked: dict[int, socket.socket] = {}
    _say(answer, json.dumps({"ready": os.getpid(), "socket": path}) + "\n")
    stdin = sys.stdin
    while True:
        ready, _, _ = select.select([stdin, listener, *_askers(asked)], [], [], 0.2)
        _end_orphans(ready, asked)
        _reap(answer, asked)
        if listener in ready:
            _accept(listener, asked)
        if stdin not in ready:
            continue
        line = stdin.readline()
        if not line:  # the runner is gone without closing: so is everything it started
            _kill_children()
            break
        request = json.loads(line)
        if request.get("close"):
            break
        pid = os.fork()
        if pid == 0:
            listener.close()
            for conn in asked.values():
                conn.close()
            _child(request)
        LIVE.add(pid)
        _say(answer, json.dumps({"pid": pid}) + "\n")
    listener.close()
    while _reap(answer, asked):  # closed: wait for the children (an orphan's end too)
        ready, _, _ = select.select(_askers(asked), [], [], 0.2)
        _end_orphans(ready, asked)


if __name__ == "__main__":
    serve()
