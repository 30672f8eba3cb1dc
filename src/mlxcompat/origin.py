"""Where mlxcompat itself comes from, for `mlxcompat init`: the GitHub repository named in the
installed distribution's metadata (`Project-URL: Repository`) and the commit of a tag there.

An adopter's workflow calls mlxcompat's reusable workflow and installs the harness at one
commit (a security linter accepts no movable ref), written with the tag it came from.
"""

from __future__ import annotations

import re
import subprocess
from importlib import metadata

_GITHUB = re.compile(r"^https://github\.com/([\w.-]+/[\w.-]+?)(?:\.git)?/?$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


class OriginError(Exception):
    """mlxcompat's repository or the commit of a ref cannot be determined."""


def version() -> str:
    from mlxcompat import __version__

    return __version__


def own_repository() -> str:
    """OWNER/NAME of mlxcompat's repository, from the installed distribution's metadata."""
    try:
        urls = metadata.metadata("mlxcompat").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        urls = []
    for entry in urls:
        label, _, url = entry.partition(",")
        match = _GITHUB.match(url.strip())
        if label.strip().lower() in ("repository", "source") and match:
            return match.group(1)
    raise OriginError("the installed mlxcompat names no GitHub repository (Project-URL: "
                      "Repository); pass --repo OWNER/NAME")


def commit_of(repository: str, ref: str) -> str:
    """The commit `ref` (a tag or branch; a full SHA is returned as it is) points at in
    https://github.com/<repository>, read with `git ls-remote`."""
    if _SHA.match(ref):
        return ref
    url = f"https://github.com/{repository}"
    try:
        proc = subprocess.run(["git", "ls-remote", url, ref, f"{ref}^{{}}"],
                              capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise OriginError(f"git ls-remote {url} {ref}: {exc}") from None
    found = {}
    for line in proc.stdout.splitlines():
        sha, _, name = line.partition("\t")
        found[name.strip()] = sha.strip()
    for name in (f"refs/tags/{ref}^{{}}", f"refs/tags/{ref}", f"refs/heads/{ref}", ref):
        if name in found:
            return found[name]
    why = proc.stderr.strip().splitlines()[-1:] or ["no such ref"]
    raise OriginError(f"{ref} not found in {url} ({why[0]}); pass --ref with a tag that "
                      "exists there, or a full commit SHA")
