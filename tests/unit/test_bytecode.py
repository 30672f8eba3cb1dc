"""mlxcompat.bytecode: a run that had bytecode turned off keeps it in a folder of its own."""

import os
import subprocess
import sys

from mlxcompat.bytecode import keep_bytecode


def test_turned_off_bytecode_goes_to_the_cache(tmp_path):
    env = {"PYTHONDONTWRITEBYTECODE": "1"}
    assert keep_bytecode(tmp_path / "pyc", env) == str((tmp_path / "pyc").resolve())
    assert env == {"PYTHONPYCACHEPREFIX": str((tmp_path / "pyc").resolve())}


def test_left_alone_when_written_opted_out_or_prefixed(tmp_path):
    for env in ({}, {"PYTHONDONTWRITEBYTECODE": ""},
                {"PYTHONDONTWRITEBYTECODE": "1", "MLXCOMPAT_BYTECODE": "0"}):
        before = dict(env)
        assert keep_bytecode(tmp_path, env) == ""
        assert env == before
    env = {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": "/elsewhere"}
    assert keep_bytecode(tmp_path, env) == "/elsewhere"
    assert env == {"PYTHONPYCACHEPREFIX": "/elsewhere"}


def test_a_child_writes_its_bytecode_under_the_prefix_only(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    (source / "tinymod.py").write_text("VALUE = 3\n")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(source)}
    env.pop("PYTHONPYCACHEPREFIX", None)
    env.pop("MLXCOMPAT_BYTECODE", None)
    prefix = keep_bytecode(tmp_path / "cache", env)
    subprocess.run([sys.executable, "-c", "import tinymod"], env=env, check=True)
    written = list((tmp_path / "cache").rglob("tinymod*.pyc"))
    assert len(written) == 1 and str(written[0]).startswith(prefix)
    assert not (source / "__pycache__").exists()
