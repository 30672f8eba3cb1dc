"""Install the built wheel alone into a fresh venv and run it: what `pip install mlxcompat`
would give a user the day a release is published.

    python scripts/check_wheel.py dist [--tag vX.Y.Z]

Fails (exit 1, naming it) when dist/ has not exactly one wheel and one sdist of one version,
the tag is not v<version>, the installed version differs, package data is missing, or the
`mlxcompat` command does not run. Needs uv.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

DATA = ("builtin.yaml", "hosted_runners.yaml", "suite/pytest.ini", "templates/compat.yml.tmpl",
        "templates/matrix.yaml.tmpl", "templates/noxfile.py.tmpl")
PROBE = """
import sys
from importlib import metadata, resources
import mlxcompat
files = resources.files("mlxcompat")
missing = [p for p in sys.argv[2:] if not files.joinpath(p).is_file()]
assert not missing, f"package data missing from the wheel: {missing}"
assert metadata.version("mlxcompat") == mlxcompat.__version__ == sys.argv[1], sys.argv[1]
assert list((files / "report" / "templates").iterdir()), "report templates missing"
print(f"mlxcompat {mlxcompat.__version__} from {files}")
"""


def _run(*cmd: str) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit(f"check_wheel: {' '.join(cmd)} exited {proc.returncode}:\n"
                 f"{(proc.stdout + proc.stderr)[-3000:]}")
    return proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("dist", type=Path)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    wheels = sorted(args.dist.glob("mlxcompat-*.whl"))
    sdists = sorted(args.dist.glob("mlxcompat-*.tar.gz"))
    if len(wheels) != 1 or len(sdists) != 1:
        sys.exit(f"check_wheel: want one wheel and one sdist in {args.dist}, found "
                 f"{[p.name for p in wheels + sdists]}")
    version = wheels[0].name.split("-")[1]
    if sdists[0].name != f"mlxcompat-{version}.tar.gz":
        sys.exit(f"check_wheel: {sdists[0].name} is not version {version}")
    if args.tag and args.tag != f"v{version}":
        sys.exit(f"check_wheel: tag {args.tag} is not v{version} (src/mlxcompat/__init__.py)")
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"
        _run("uv", "venv", "-q", str(venv), "--python", "3.11")
        _run("uv", "pip", "install", "-q", "--python", str(venv), str(wheels[0]))
        print(_run(str(venv / "bin" / "python"), "-c", PROBE, version, *DATA).strip())
        assert "usage: mlxcompat" in _run(str(venv / "bin" / "mlxcompat"), "--help")
        print(_run(str(venv / "bin" / "mlxcompat"), "runners", "--check",
                   '["macos-15", "macos-26"]').strip())
    print(f"check_wheel: {wheels[0].name} and {sdists[0].name} install and run")
    return 0


if __name__ == "__main__":
    sys.exit(main())
