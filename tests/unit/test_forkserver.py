"""The fork server: a child per request runs pytest with its own argv, environment and
output, and its exit code comes back; an orderly close waits for the children, the runner's
death (stdin's bare end) kills them."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from prockit import wait_for

from mlxcompat import forkserver

pytestmark = pytest.mark.skipif(not forkserver.available(), reason="fork server is Linux-only")


def _request(tmp: Path, name: str, body: str) -> dict:
    test = tmp / f"test_{name}.py"
    test.write_text(body)
    out = tmp / f"{name}.out"
    os.mkfifo(out)
    return {"argv": [str(test), "-q", "-p", "no:cacheprovider", "--rootdir", str(tmp)],
            "env": {**os.environ, "MARK": name}, "out": str(out)}


def test_children_run_with_their_own_env_and_report_their_exit(tmp_path: Path) -> None:
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert "ready" in json.loads(server.stdout.readline())
    passing = _request(tmp_path, "ok", "import os\ndef test_env():\n"
                       "    assert os.environ['MARK'] == 'ok'\n")
    failing = _request(tmp_path, "bad", "def test_fails():\n    assert False\n")
    outputs: dict[str, str] = {}
    pids = {}
    for name, request in (("ok", passing), ("bad", failing)):
        server.stdin.write(json.dumps(request) + "\n")
        server.stdin.flush()

        def read(path=request["out"], key=name):
            outputs[key] = Path(path).read_text()

        reader = threading.Thread(target=read)
        reader.start()
        pids[json.loads(server.stdout.readline())["pid"]] = (name, reader)
    server.stdin.write(json.dumps({"close": True}) + "\n")
    server.stdin.close()
    codes = {}
    for line in server.stdout:
        message = json.loads(line)
        codes[pids[message["exit"]][0]] = message["code"]
    for _, reader in pids.values():
        reader.join(timeout=30)
    assert server.wait(timeout=30) == 0
    assert codes == {"ok": 0, "bad": 1}
    assert "1 passed" in outputs["ok"] and "1 failed" in outputs["bad"]


def test_the_runners_death_ends_every_child_a_frozen_one_too(tmp_path: Path) -> None:
    """stdin's end without {"close": true} is the runner gone (SIGKILL): a child it had
    frozen (SIGSTOP, a GPU backend's waiting subject) would otherwise stay stopped for good."""
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(600)\n")
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    answers = _lines(server.stdout)
    assert "ready" in answers.get(timeout=60)
    out = tmp_path / "sleeper.out"
    os.mkfifo(out)
    threading.Thread(target=out.read_text, daemon=True).start()
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    server.stdin.write(json.dumps({"argv": [], "env": env, "out": str(out),
                                   "module": "sleeper"}) + "\n")
    server.stdin.flush()
    pid = answers.get(timeout=30)["pid"]
    for _ in range(200):  # until the child leads its own session, as the runner freezes it
        try:
            os.killpg(pid, signal.SIGSTOP)
            break
        except ProcessLookupError:
            time.sleep(0.05)
    assert wait_for(pid, "T", tries=200, pause=0.05) == "T", "the child never stopped"
    server.stdin.close()
    try:
        assert answers.get(timeout=30) == {"exit": pid, "code": -signal.SIGKILL}
        assert server.wait(timeout=30) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        server.kill()
    assert not Path(f"/proc/{pid}").exists()


def test_a_runner_killed_outright_leaves_no_traceback(tmp_path: Path) -> None:
    """Both pipes gone (the runner SIGKILLed): the children are killed and their exits,
    which nobody can read any more, are dropped without a BrokenPipeError."""
    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(600)\n")
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    assert "ready" in json.loads(server.stdout.readline())
    out = tmp_path / "sleeper.out"
    os.mkfifo(out)
    threading.Thread(target=out.read_text, daemon=True).start()
    server.stdin.write(json.dumps({"argv": [], "out": str(out), "module": "sleeper",
                                   "env": {**os.environ, "PYTHONPATH": str(tmp_path)}}) + "\n")
    server.stdin.flush()
    pid = json.loads(server.stdout.readline())["pid"]
    server.stdout.close()
    server.stdin.close()
    try:
        assert server.wait(timeout=30) == 0
        assert "Error" not in server.stderr.read()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)
        server.kill()
    assert wait_for(pid, "gone", tries=100, pause=0.05) == "gone"


def test_a_subject_process_gets_its_servers_forked_warm(tmp_path: Path,
                                                        monkeypatch) -> None:
    """A server asked for over the socket is a real mlx_lm.server (it answers a completion),
    its output comes back, and its end (SIGTERM) is reported to the one who asked; a server
    whose asker is gone ends too."""
    pytest.importorskip("mlx_lm")
    from mlxcompat.drivers import forked
    from mlxcompat.drivers.server import Server
    from mlxcompat.models.saved import save_tiny, to_text

    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        ready = json.loads(server.stdout.readline())
        monkeypatch.setenv(forked.SOCKET_ENV, ready["socket"])
        folder = save_tiny("llama", tmp_path / "llama")
        served = Server(folder, {}).start()
        assert isinstance(served.proc, forked.ForkedServer)
        assert served.applied == {}  # its `[mlxcompat-serve]` line came through the fifo
        import httpx

        got = httpx.post(f"{served.url}/v1/completions", timeout=30,
                         json={"prompt": to_text([1, 2, 3]), "max_tokens": 2})
        assert got.status_code == 200 and got.json()["choices"][0]["text"]
        served.stop()
        assert served.proc.returncode == -15
        assert not served.proc._folder.exists()  # its fifo's folder went with it

        asker = subprocess.run(  # starts a server, then ends without stopping it
            [sys.executable, "-c", "import sys; from pathlib import Path; "
             "from mlxcompat.drivers.server import Server; "
             "s = Server(Path(sys.argv[1]), {}).start(); print(s.proc._folder, s.proc.pid)",
             str(folder)], capture_output=True, text=True, timeout=120, check=True)
        fifo_folder, orphan = Path(asker.stdout.split()[-2]), int(asker.stdout.split()[-1])
        assert not fifo_folder.exists()  # removed at the asker's exit, though never stopped
        for _ in range(300):  # it looks at its asker once a second
            if not Path(f"/proc/{orphan}").exists():
                break
            import time

            time.sleep(0.1)
        assert not Path(f"/proc/{orphan}").exists()
    finally:
        server.stdin.close()
        server.wait(timeout=60)


def test_a_child_runs_a_module_and_its_sys_exit_is_its_exit_code(tmp_path: Path) -> None:
    """How the need probe runs forked warm: `python -m MODULE ARGV`, its `sys.exit(n)` the
    code reported (no traceback for a clean exit)."""
    (tmp_path / "exiter.py").write_text("import sys\nprint('args', sys.argv[1:])\n"
                                        "sys.exit(int(sys.argv[1]))\n")
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert "ready" in json.loads(server.stdout.readline())
    outputs, codes = [], []
    for code in ("0", "3"):
        out = tmp_path / f"exit{code}.out"
        os.mkfifo(out)
        env = {**os.environ, "PYTHONPATH": str(tmp_path)}
        server.stdin.write(json.dumps({"argv": [code], "env": env, "out": str(out),
                                       "module": "exiter"}) + "\n")
        server.stdin.flush()
        reader = threading.Thread(target=lambda p=out: outputs.append(p.read_text()))
        reader.start()
        json.loads(server.stdout.readline())  # the pid
        codes.append(json.loads(server.stdout.readline())["code"])
        reader.join(timeout=30)
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    assert codes == [0, 3]
    assert "args ['0']" in outputs[0] and "Traceback" not in "".join(outputs)


def _lines(stream) -> queue.Queue:
    found: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [found.put(json.loads(x)) for x in stream],
                     daemon=True).start()
    return found


def test_a_child_that_cannot_open_its_output_ends_alone(tmp_path: Path) -> None:
    """A request whose FIFO is missing: the child says why on the server's stderr and ends
    with 1 at once, and the server goes on serving."""
    (tmp_path / "exiter.py").write_text("import sys\nsys.exit(int(sys.argv[1]))\n")
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
    answers = _lines(server.stdout)
    assert "ready" in answers.get(timeout=60)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    for out, code in ((tmp_path / "missing.out", 1), (tmp_path / "ok.out", 3)):
        if code == 3:
            os.mkfifo(out)
            threading.Thread(target=out.read_text, daemon=True).start()
        server.stdin.write(json.dumps({"argv": [str(code)], "env": env, "out": str(out),
                                       "module": "exiter"}) + "\n")
        server.stdin.flush()
        pid = answers.get(timeout=30)["pid"]
        assert answers.get(timeout=30) == {"exit": pid, "code": code}
    server.stdin.close()
    assert server.wait(timeout=30) == 0
    assert "FileNotFoundError" in server.stderr.read()


def test_a_reader_waiting_on_a_fifo_its_child_never_opened_gets_its_end(tmp_path: Path) -> None:
    """The runner's side: a forked child that ended before opening its FIFO still gives its
    reader an end of file, so the runner sees the exit now, not at the cell's deadline."""
    from mlxcompat.forkclient import ForkedProcess, read_fifo

    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    proc = ForkedProcess(0, str(fifo))
    events: queue.Queue = queue.Queue()
    read_fifo(fifo, "subject", events, proc)
    proc.ended(1)
    assert events.get(timeout=10) == ("eof", "subject", "")


@pytest.mark.parametrize("closed_first", [False, True], ids=["serving", "closing"])
def test_a_paused_server_whose_asker_is_gone_is_killed(tmp_path: Path,
                                                      closed_first: bool) -> None:
    """A subject killed outright (Ctrl-C, a cell's timeout: the runner SIGKILLs it) cannot stop
    its servers, and one it had paused (SIGSTOP) never sees its asker go: it stayed stopped
    and listening for good, and a closed fork server waited for it for good (Ctrl-C on a
    `matrix(mlx-lm-0.32.2)` run, 2026-12-07). The asker's connection ending is its end."""
    import socket

    (tmp_path / "sleeper.py").write_text("import time\ntime.sleep(600)\n")
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    answers = _lines(server.stdout)
    ready = answers.get(timeout=60)
    out = tmp_path / "served.out"
    os.mkfifo(out)
    threading.Thread(target=out.read_text, daemon=True).start()
    asker = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    asker.connect(ready["socket"])
    asker.sendall((json.dumps({"argv": [], "out": str(out), "module": "sleeper",
                               "env": {**os.environ, "PYTHONPATH": str(tmp_path)}})
                   + "\n").encode())
    pid = json.loads(asker.makefile("r").readline())["pid"]
    try:
        os.kill(pid, signal.SIGSTOP)  # as `Server.pause` does
        assert wait_for(pid, "T", tries=200, pause=0.05) == "T"
        if closed_first:  # the runner's orderly end came before the asker's death
            server.stdin.write(json.dumps({"close": True}) + "\n")
            server.stdin.close()
        asker.close()  # the asker killed outright: only its connection tells
        assert wait_for(pid, "gone Z", tries=200, pause=0.05) in ("gone", "Z")
        if closed_first:
            assert server.wait(timeout=30) == 0
        else:
            server.stdin.close()
            assert server.wait(timeout=30) == 0
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        server.kill()
    assert wait_for(pid, "gone", tries=100, pause=0.05) == "gone"


def test_a_runner_gone_before_the_ready_line_leaves_no_traceback_and_no_folder(
        tmp_path: Path) -> None:
    """Ctrl-C while the runner waits for the ready line: the fork server (its own session,
    so no SIGINT) wrote into a closed pipe, printed a BrokenPipeError and left its socket's
    folder behind (a full matrix run, 2026-12-07). It ends quietly and takes its folder."""
    temp = tmp_path / "temp"
    temp.mkdir()
    server = subprocess.Popen([sys.executable, "-m", "mlxcompat.forkserver"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, env={**os.environ, "TMPDIR": str(temp)})
    server.stdout.close()  # the runner is gone before reading anything
    server.stdin.close()
    assert server.wait(timeout=60) == 0
    said = server.stderr.read()  # transformers may say it found no PyTorch: not ours
    assert b"Traceback" not in said and b"BrokenPipeError" not in said, said
    assert list(temp.iterdir()) == []
