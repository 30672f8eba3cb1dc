"""Start `mlx_lm.server` the way a server that ships patches starts it: the subject's entry
points first, then the server's own `main()`, in one process.

`python -m mlxcompat.serve [--apply role=module:function ...] [--device cpu|gpu]
[--no-prompt-cache] -- <mlx_lm.server arguments>`

Each entry point is imported by name and called before `mlx_lm.server` is imported (as a
server's start-up code does); one line `[mlxcompat-serve] {json}` on stderr says what each
returned or raised, and another the port once this process listens on it (`_say_listening`).
`--no-prompt-cache` makes the server's prompt cache miss on every fetch
(`drivers.server.turn_prompt_cache_off`): the reference server, where each request is served
alone, never reuses another's cache on a release that has no `--prompt-cache-size` flag.
"""

from __future__ import annotations

import importlib
import json
import sys
from typing import Any


def _apply(points: list[str]) -> dict[str, str]:
    done = {}
    for point in points:
        role, _, target = point.partition("=")
        module, _, function = target.partition(":")
        try:
            returned: Any = getattr(importlib.import_module(module), function)()
            done[role] = repr(returned)[:200]
        except Exception as exc:
            done[role] = f"raised {type(exc).__name__}: {exc}"[:300]
    return done


def _end_with_parent() -> None:
    """Exit when the process that started this server is gone (killed, timed out): a
    server must never outlive its check. A server forked by the fork server is not its
    asker's child: the asker names itself (MLXCOMPAT_SERVE_PARENT)."""
    import os
    import threading
    import time

    parent = int(os.environ.get("MLXCOMPAT_SERVE_PARENT") or os.getppid())

    def alive() -> bool:
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return _not_zombie(parent)  # ended, not yet reaped by its own parent

    def watch() -> None:
        while alive():
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, daemon=True).start()


def _say_listening() -> None:
    """Print `[mlxcompat-serve] {"listening": port}` once the server's socket listens. The
    checker picks a free port and this process binds it a second later; meanwhile another
    server may take it, and its `/health` answered for this one, which never could bind
    (Linux hands a freed port out again within a few binds: 13 of 50,000 within 5). The
    line is what the checker waits for, never `/health` alone."""
    import socketserver

    activate = socketserver.TCPServer.server_activate

    def server_activate(self: Any) -> None:
        activate(self)
        port = self.server_address[1]
        print("[mlxcompat-serve] " + json.dumps({"listening": port}), file=sys.stderr,
              flush=True)

    socketserver.TCPServer.server_activate = server_activate  # type: ignore[method-assign]


def _not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return True  # no /proc (macOS): signal 0 answered, take it as alive


NICE = 10  # below its checker: see _yield_to_the_checker


def _yield_to_the_checker() -> None:
    """Lower this server's priority before any thread starts. The server check times when
    a group of requests reaches a server busy with a blocker; on a 2-core machine with two
    subjects' servers prefilling, the checker's threads woke up to 160 ms late (a sleep of
    40 ms beside a cell), after the blocker was answered, and the group met an idle server.
    A nice server still gets every idle cycle: its answers are the same, only who waits
    under contention changes."""
    import os

    if hasattr(os, "nice"):
        os.nice(NICE)


def main(argv: list[str]) -> None:
    ours, _, rest = (argv[: argv.index("--")], None, argv[argv.index("--") + 1:]) \
        if "--" in argv else (argv, None, [])
    points, device, no_cache = [], "cpu", False
    it = iter(ours)
    for arg in it:
        if arg == "--apply":
            points.append(next(it))
        elif arg == "--device":
            device = next(it)
        elif arg == "--no-prompt-cache":
            no_cache = True
        else:
            raise SystemExit(f"mlxcompat.serve: unknown argument {arg!r}")
    _yield_to_the_checker()
    _end_with_parent()
    import mlx.core as mx

    mx.set_default_device(mx.gpu if device == "gpu" else mx.cpu)
    applied = _apply(points)
    print("[mlxcompat-serve] " + json.dumps({"applied": applied}), file=sys.stderr, flush=True)
    server = importlib.import_module("mlx_lm.server")
    if no_cache:
        from mlxcompat.drivers.server import turn_prompt_cache_off

        turn_prompt_cache_off(server)
    sys.argv = ["mlx_lm.server", *rest]
    _say_listening()
    server.main()


if __name__ == "__main__":
    main(sys.argv[1:])
