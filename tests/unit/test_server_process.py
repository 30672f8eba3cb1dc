"""The `server` check's server process (drivers.server, mlxcompat.serve): the serve wrapper,
turning the prompt cache off, reading a dead generation thread from the log, pausing, and the
folder of servers that never started."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from mlxcompat.drivers.server import turn_prompt_cache_off

sys.path.insert(0, str(Path(__file__).parent))  # fake_entry_points


def test_the_serve_wrapper_applies_entry_points_and_can_turn_the_prompt_cache_off() -> None:
    import types

    from mlxcompat import serve

    applied = serve._apply(["mamba=fake_entry_points:returns_status",
                            "glm4v=fake_entry_points:raises"])
    assert "skipped" in applied["mamba"] and applied["glm4v"].startswith("raised RuntimeError")

    class LRUPromptCache:
        def fetch_nearest_cache(self, model: Any, tokens: Any) -> Any:
            return "a cache", tokens[3:]

    server = types.SimpleNamespace(LRUPromptCache=LRUPromptCache)
    turn_prompt_cache_off(server)
    assert LRUPromptCache().fetch_nearest_cache("m", [1, 2, 3, 4]) == (None, [1, 2, 3, 4])

    class APIHandler:  # 0.28.0-0.28.3: one cache per handler, kept between requests
        def __init__(self) -> None:
            self.tokens: list[int] = [1, 2]

        def reset_prompt_cache(self, prompt: list[int]) -> None:
            self.tokens = list(prompt)

        def get_prompt_cache(self, prompt: list[int]) -> list[int]:
            return prompt[len(self.tokens):]

    turn_prompt_cache_off(types.SimpleNamespace(APIHandler=APIHandler))
    handler = APIHandler()
    assert handler.get_prompt_cache([1, 2, 3]) == [1, 2, 3] and handler.tokens == [1, 2, 3]
    with pytest.raises(RuntimeError, match="cannot be turned off"):
        turn_prompt_cache_off(types.SimpleNamespace())


class _Process:
    """A server process that printed `lines` and still runs."""

    def __init__(self, lines: list[str]) -> None:
        self.stdout = iter(line + "\n" for line in lines)
        self.returncode = None

    def poll(self) -> None:
        return None


DIED = ['127.0.0.1 - - "POST /v1/completions HTTP/1.1" 200 -',
        "Exception in thread Thread-2 (_generate):",
        "Traceback (most recent call last):",
        '  File "mlx_lm/server.py", line 891, in _generate',
        "    r.logprobs[r.token].item(),",
        "TypeError: 'NoneType' object is not subscriptable",
        '127.0.0.1 - - "GET /health HTTP/1.1" 200 -']


def test_a_dead_generation_thread_is_read_from_the_servers_log() -> None:
    from mlxcompat.drivers.server import Server

    server = Server(Path("/m"), {})
    server.proc = _Process([*DIED[:1], "Exception in thread Thread-3 (other):"])
    server._read()
    assert server.death() == ""  # only the generation thread's end leaves requests hanging
    server.proc = _Process(DIED[:4])
    server._read()
    assert server.death() == ""  # its exception is not printed yet
    server.proc = _Process(DIED[4:])
    server._read()
    assert server.death() == ("its generation thread died: "
                              "TypeError: 'NoneType' object is not subscriptable")


def test_an_error_ignored_in_a_del_amid_the_traceback_is_not_the_threads() -> None:
    """0.31.2 under vllm-mlx 0.6.0's old patch: a BatchGenerator's `__del__` fails while the
    thread's IndexError is printed; the thread died of the IndexError."""
    from mlxcompat.drivers.server import Server

    server = Server(Path("/m"), {})
    server.proc = _Process([*DIED[1:4], "Exception ignored in: <function BatchGenerator.__del__>",
                            "Traceback (most recent call last):",
                            '  File "mlx_lm/generate.py", line 1548, in close',
                            "AttributeError: 'BatchGenerator' object has no attribute 'x'",
                            "IndexError: list index out of range"])
    server._read()
    assert server.death() == "its generation thread died: IndexError: list index out of range"


def test_a_paused_server_is_stopped_until_resumed_and_stop_ends_it_even_paused() -> None:
    """`Server.pause` stops the process (state T) so that its idle loop takes no CPU, and
    `stop()` of a paused server still ends it (a stopped process acts on SIGTERM only once
    continued)."""
    import subprocess
    import time

    from mlxcompat.drivers.server import Server

    def state(pid: int) -> str:  # ps, not /proc: the same on macOS
        return subprocess.run(["ps", "-o", "stat=", "-p", str(pid)], capture_output=True,
                              text=True, check=True).stdout.strip()[:1]

    server = Server(Path("/m"), {})
    server.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        server.pause()
        deadline = time.monotonic() + 5
        while state(server.proc.pid) != "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        assert state(server.proc.pid) == "T"
        server.resume()
        deadline = time.monotonic() + 5
        while state(server.proc.pid) == "T" and time.monotonic() < deadline:
            time.sleep(0.01)
        # Continued: anything but stopped or dead. "D" is as good as "S" or "R": the child may
        # still be reading its interpreter from disk (CI once caught it there).
        assert state(server.proc.pid) not in "TZ"
        server.pause()
        began = time.monotonic()
        server.stop()
        assert server.proc.poll() is not None and time.monotonic() - began < 10
    finally:
        server.proc.kill()
        server.proc.wait()


def test_a_dying_thread_s_exception_is_found_past_access_log_lines() -> None:
    from mlxcompat.drivers.server import _raised

    lines = ['  File "mlx_lm/server.py", line 9, in _generate',
             '127.0.0.1 - - [04/Dec/2026 19:10:52] "POST /v1/completions HTTP/1.1" 200 -',
             "    cache = MambaCache(size=2)",
             "TypeError: MambaCache.__init__() got an unexpected keyword argument 'size'"]
    assert _raised(lines) == lines[-1]


def test_a_model_the_release_lacks_leaves_no_folder_behind(tmp_path, monkeypatch) -> None:
    """The folder made for a pair of servers that never started (the model is absent
    from this release: SkipCheck) goes at once: no session owns it for `stop_servers`."""
    import tempfile

    from mlxcompat.checks import server
    from mlxcompat.errors import SkipCheck
    from mlxcompat.models import saved

    def absent(name: str, folder: Any) -> None:
        folder.mkdir(parents=True)
        raise SkipCheck(f"{name} is not in this release")

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(saved, "save_tiny", absent)
    with pytest.raises(SkipCheck):
        server.server_run("qwen3_5", None)  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


def test_a_server_checks_folders_go_inside_the_runners_scratch_folder(tmp_path,
                                                                       monkeypatch) -> None:
    """A subject killed outright (Ctrl-C, a cell's timeout) removes none of its temporary
    folders; made inside the runner's own, they go with it. Outside a runner: the system's."""
    from mlxcompat.checks import server
    from mlxcompat.drivers import forked
    from mlxcompat.errors import SkipCheck
    from mlxcompat.models import saved

    roots: list[Path] = []

    def absent(name: str, folder: Any) -> None:
        roots.append(folder.parent)
        raise SkipCheck(f"{name} is not in this release")

    monkeypatch.setattr(saved, "save_tiny", absent)
    scratch = tmp_path / "runner-tmp"
    scratch.mkdir()
    monkeypatch.setenv(forked.SCRATCH_ENV, str(scratch))
    with pytest.raises(SkipCheck):
        server.server_run("qwen3_5", None)  # type: ignore[arg-type]
    assert roots[-1].parent == scratch
    monkeypatch.setenv(forked.SCRATCH_ENV, str(tmp_path / "gone"))  # its runner ended
    assert forked.scratch() is None


def test_a_server_whose_port_another_took_first_starts_on_another(tmp_path,
                                                                   monkeypatch) -> None:
    """The port picked for a server is free when picked, not when the server binds it a
    second later: another process that took it first answered `/health` for it. The
    server's own "listening" line is waited for; one that could not bind starts again."""
    pytest.importorskip("mlx_lm")
    import http.server
    import threading

    from mlxcompat.drivers import server as driver
    from mlxcompat.models.saved import save_tiny

    class Health(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    impostor = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Health)
    threading.Thread(target=impostor.serve_forever, daemon=True).start()
    taken = impostor.server_address[1]
    picks = iter([taken])
    real = driver.free_port
    monkeypatch.setattr(driver, "free_port", lambda: next(picks, None) or real())
    monkeypatch.delenv("MLXCOMPAT_FORK_SOCKET", raising=False)
    served = driver.Server(save_tiny("llama", tmp_path / "llama"), {})
    try:
        served.start()
        assert served.port != taken and served.listening == served.port
        assert served.proc.poll() is None
    finally:
        served.stop()
        impostor.shutdown()
