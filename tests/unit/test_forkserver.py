"""The fork server: a child per request runs pytest with its own argv, environment and
output, and its exit code comes back; closing stdin waits for the children."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

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
