"""The `uses:` steps the workflows call, emulated for the step runner (see gha_runner)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from gha_expr import render

if TYPE_CHECKING:
    from gha_runner import Runner


def uv_bin() -> str:
    import uv

    return str(uv.find_uv_bin())


class Actions:
    def __init__(self, runner: Runner) -> None:
        self.r = runner

    def git_show(self, repo: str, ref: str, path: str) -> str:
        return self._git(self._standin(repo), "show", f"{ref}:{path}")

    def _standin(self, repo: str) -> Path:
        if repo not in self.r.fx.standins:
            from gha_runner import WorkflowError

            raise WorkflowError(f"{repo}: no such repository (no stand-in for github.com/{repo})")
        return self.r.fx.standins[repo]

    def _git(self, where: Path, *args: str) -> str:
        return subprocess.run(["git", "-C", str(where), *args], capture_output=True, text=True,
                              check=True).stdout

    def use(self, uses: str, with_: dict[str, Any], state: dict[str, Any],
            env: dict[str, str], where: str) -> dict[str, str]:
        name, _, ref = uses.partition("@")
        if uses.startswith("./"):
            return self.composite(state["work"] / uses, with_, state, env, where)
        handlers = {"actions/checkout": self.checkout, "actions/setup-python": self.python,
                    "astral-sh/setup-uv": self.uv, "actions/upload-artifact": self.upload,
                    "actions/download-artifact": self.download}
        if name in handlers:
            return handlers[name](with_, state)
        dest = self.r.fx.root / "_actions" / name / ref
        if not dest.exists():
            dest.parent.mkdir(parents=True, exist_ok=True)
            subprocess.run(["git", "clone", "-q", str(self._standin(name)), str(dest)],
                           check=True)
            self._git(dest, "checkout", "-q", ref)
        return self.composite(dest, with_, state, env, where)

    def checkout(self, with_: dict[str, Any], state: dict[str, Any]) -> dict[str, str]:
        """A clone of the caller's repository (or `repository:`) into the workspace."""
        repo = with_.get("repository")
        source = self._standin(repo) if repo else self.r.fx.source
        dest = state["work"] / with_.get("path", "")
        tmp = state["temp"] / "checkout"
        subprocess.run(["git", "clone", "-q", str(source), str(tmp)], check=True)
        if with_.get("ref"):
            self._git(tmp, "checkout", "-q", with_["ref"])
        for item in tmp.iterdir():
            item.rename(dest / item.name)
        return {}

    def python(self, with_: dict[str, Any], state: dict[str, Any]) -> dict[str, str]:
        """A fresh CPython with pip on PATH, as the runner's tool cache gives each job."""
        if str(with_.get("python-version")) != "3.11":
            raise RuntimeError(f"setup-python {with_.get('python-version')}: only 3.11 here")
        venv = state["temp"] / "python"
        subprocess.run([uv_bin(), "venv", "-q", "--seed", "--python", sys.executable,
                        str(venv)], check=True)
        state["env"]["PATH"] = f"{venv / 'bin'}:{state['env']['PATH']}"
        return {"python-version": "3.11"}

    def uv(self, with_: dict[str, Any], state: dict[str, Any]) -> dict[str, str]:
        """uv on PATH (the binary only: no Python package, as setup-uv does)."""
        tools = state["temp"] / "uv-bin"
        tools.mkdir()
        (tools / "uv").symlink_to(uv_bin())
        state["env"]["PATH"] = f"{tools}:{state['env']['PATH']}"
        return {"uv-path": str(tools / "uv")}

    def upload(self, with_: dict[str, Any], state: dict[str, Any]) -> dict[str, str]:
        work: Path = state["work"]
        paths = [work / p.strip() for p in str(with_["path"]).splitlines() if p.strip()]
        existing = [p for p in paths if p.exists()]
        if not existing and with_.get("if-no-files-found", "warn") == "error":
            raise subprocess.CalledProcessError(1, "upload-artifact", "no files found")
        parts = [p.parts if p.is_dir() else p.parent.parts for p in existing]
        common = [a for a, *rest in zip(*parts, strict=False) if all(a == b for b in rest)]
        base = Path(*common) if existing else work
        self.r.upload(str(with_["name"]), existing, base, bool(with_.get("overwrite")))
        return {}

    def download(self, with_: dict[str, Any], state: dict[str, Any]) -> dict[str, str]:
        dest = state["work"] / with_.get("path", "")
        dest.mkdir(parents=True, exist_ok=True)
        if not with_.get("merge-multiple") and with_.get("pattern"):
            raise RuntimeError("download-artifact without merge-multiple is not emulated")
        self.r.download(str(with_.get("pattern") or with_["name"]), dest)
        return {}

    def composite(self, path: Path, with_: dict[str, Any], state: dict[str, Any],
                  env: dict[str, str], where: str) -> dict[str, str]:
        """A composite action's steps, with GITHUB_ACTION_PATH at its folder."""
        doc = yaml.safe_load((path / "action.yml").read_text())
        if doc["runs"]["using"] != "composite":
            raise RuntimeError(f"{path}: only composite actions are emulated")
        decl = doc.get("inputs") or {}
        inputs = {k: with_.get(k, v.get("default", "")) for k, v in decl.items()}
        steps: dict[str, Any] = {}
        github = {**self.r.github, "action_path": str(path)}
        for i, step in enumerate(doc["runs"]["steps"]):
            ctx = {"github": github, "inputs": inputs, "steps": steps, "env": env,
                   "runner": {"os": "Linux"}}
            step_env = {**env, "GITHUB_ACTION_PATH": str(path),
                        **{k: str(render(v, ctx)) for k, v in (step.get("env") or {}).items()}}
            out = self.r.script(str(render(step["run"], ctx)), step_env, state, step["shell"],
                                f"{where} ({path.name} step {i + 1})")
            if step.get("id"):
                steps[step["id"]] = {"outputs": out}
        ctx = {"steps": steps, "inputs": inputs, "github": github}
        return {k: str(render(v["value"], ctx)) for k, v in (doc.get("outputs") or {}).items()}
