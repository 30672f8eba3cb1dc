"""Run a GitHub Actions workflow's jobs here, in the order GitHub would, step by step.

Each `run:` step runs as GitHub runs it (a script file under `bash -e`, or `bash --noprofile
--norc -eo pipefail` for `shell: bash`) with `${{ }}` rendered from the contexts (github,
inputs, matrix, needs, steps, env, runner, jobs) and the GITHUB_OUTPUT / GITHUB_ENV /
GITHUB_PATH / GITHUB_STEP_SUMMARY files read back. `uses:` is emulated: checkout copies the
repository, setup-python makes a fresh Python 3.11 with pip (each job its own), setup-uv puts
uv on PATH, upload/download-artifact copy folders, a composite action (local or from a stand-in
repository) runs its steps, a reusable workflow is read from the caller or a stand-in
repository at the ref. Jobs on a retired label fail, as on GitHub. A job on a macOS label
runs here on Linux with the fixture's `label_env` on top (this machine has no Metal).
"""

from __future__ import annotations

import fnmatch
import itertools
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from gha_actions import Actions
from gha_expr import condition, render

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


class WorkflowError(Exception):
    pass


@dataclass
class Fixture:
    """What GitHub would supply: the event, the repositories, and this machine's stand-ins."""

    root: Path  # scratch folder for runners, artifacts and logs
    repository: str  # OWNER/NAME of the caller
    source: Path  # the caller's repository (a checkout copies its files)
    event_name: str = "push"
    ref: str = "refs/heads/main"
    standins: dict[str, Path] = field(default_factory=dict)  # OWNER/NAME -> local git repo
    label_env: dict[str, dict[str, str]] = field(default_factory=dict)
    base_env: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)


def load(text: str) -> dict[str, Any]:
    doc = yaml.safe_load(text)
    doc["on"] = doc.pop(True, doc.get("on"))
    return doc


@dataclass
class JobResult:
    result: str
    outputs: dict[str, Any] = field(default_factory=dict)
    failed_step: str = ""
    tail: str = ""


class Runner:
    def __init__(self, fx: Fixture) -> None:
        self.fx = fx
        self.artifacts = fx.root / "artifacts"
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.actions = Actions(self)
        self.github = {"event_name": fx.event_name, "ref": fx.ref,
                       "ref_name": fx.ref.rsplit("/", 1)[-1], "repository": fx.repository,
                       "sha": "0" * 40, "server_url": "https://github.com", "run_id": "1",
                       "workspace": "", "event": {"repository": {"default_branch": "main"}}}
        self.count = 0

    # ---- workflows ---------------------------------------------------------------------
    def run_file(self, path: Path, event_inputs: dict[str, Any] | None = None
                 ) -> dict[str, JobResult]:
        return self.run_workflow(load(path.read_text()), event_inputs or {})

    def run_workflow(self, doc: dict[str, Any], inputs: dict[str, Any],
                     prefix: str = "") -> dict[str, JobResult]:
        results: dict[str, JobResult] = {}
        pending = dict(doc["jobs"])
        while pending:
            ready = [n for n, j in pending.items() if all(d in results for d in _needs(j))]
            if not ready:
                raise WorkflowError(f"jobs wait on each other: {sorted(pending)}")
            for name in ready:
                job = pending.pop(name)
                results[name] = self.run_job(doc, f"{prefix}{name}", job, inputs,
                                             {d: results[d] for d in _needs(job)})
        return results

    def call(self, uses: str, with_: dict[str, Any], caller: Path) -> JobResult:
        """A reusable workflow: inputs with their defaults, its jobs, its outputs."""
        if uses.startswith("./"):
            text = (caller / uses).read_text()
        else:
            repo, _, rest = uses.partition("/.github/")
            path, _, ref = rest.partition("@")
            text = self.actions.git_show(repo, ref, f".github/{path}")
        doc = load(text)
        spec = doc["on"]["workflow_call"]
        inputs = {}
        for key, decl in (spec.get("inputs") or {}).items():
            if key not in with_ and decl.get("required"):
                raise WorkflowError(f"{uses}: required input {key!r} not given")
            inputs[key] = with_.get(key, decl.get("default"))
            if decl.get("type") == "boolean" and isinstance(inputs[key], str):
                inputs[key] = inputs[key] == "true"
        unknown = set(with_) - set(spec.get("inputs") or {})
        if unknown:
            raise WorkflowError(f"{uses}: no input {sorted(unknown)}")
        jobs = self.run_workflow(doc, inputs, prefix=f"{uses.split('@')[0]}/")
        ctx = {"jobs": {n: {"result": r.result, "outputs": r.outputs} for n, r in jobs.items()}}
        outputs = {k: render(v["value"], ctx) for k, v in (spec.get("outputs") or {}).items()}
        bad = [r for r in jobs.values() if r.result == "failure"]
        self.jobs = {**getattr(self, "jobs", {}), **jobs}
        return JobResult("failure" if bad else "success", outputs,
                         bad[0].failed_step if bad else "", bad[0].tail if bad else "")

    # ---- jobs --------------------------------------------------------------------------
    def run_job(self, doc: dict[str, Any], name: str, job: dict[str, Any],
                inputs: dict[str, Any], needs: dict[str, JobResult]) -> JobResult:
        needs_ctx = {n: {"result": r.result, "outputs": r.outputs} for n, r in needs.items()}
        ctx = {"github": self.github, "inputs": inputs, "needs": needs_ctx, "vars": {},
               "secrets": {}, "env": {}}
        status = {"always": lambda: True, "cancelled": lambda: False,
                  "success": lambda: all(r.result == "success" for r in needs.values()),
                  "failure": lambda: any(r.result == "failure" for r in needs.values())}
        if not condition(job.get("if", "success()"), ctx, status):
            self.fx.log.append(f"{name}: skipped")
            return JobResult("skipped")
        if "uses" in job:
            result = self.call(job["uses"], render(job.get("with", {}), ctx, status),
                               self.fx.source)
            self.fx.log.append(f"{name}: {result.result}")
            return result
        legs = _matrix(render(job.get("strategy", {}).get("matrix", {}), ctx, status))
        results = [self.run_leg(doc, name, job, {**ctx, "matrix": leg}) for leg in legs]
        bad = [r for r in results if r.result == "failure"]
        if bad and job.get("continue-on-error"):
            return JobResult("success", results[-1].outputs, bad[0].failed_step, bad[0].tail)
        return bad[0] if bad else results[-1]

    def run_leg(self, doc: dict[str, Any], name: str, job: dict[str, Any],
                ctx: dict[str, Any]) -> JobResult:
        from mlxcompat.hosted import check

        self.count += 1
        home = self.fx.root / f"job{self.count:02d}"
        work, temp = home / "work", home / "temp"
        work.mkdir(parents=True)
        temp.mkdir()
        label = str(render(job["runs-on"], ctx))
        leg = f"{name} {ctx['matrix'] or ''} on {label}".strip()
        errors, _ = check([label])
        if errors:
            self.fx.log.append(f"{leg}: failure (runner label: {errors[0]})")
            return JobResult("failure", failed_step="runs-on", tail=errors[0])
        env = {**self.fx.base_env, "PATH": SYSTEM_PATH, "CI": "true", "GITHUB_ACTIONS": "true",
               "GITHUB_WORKSPACE": str(work), "RUNNER_TEMP": str(temp), "HOME": os.environ["HOME"],
               "GITHUB_REPOSITORY": self.fx.repository, "GITHUB_EVENT_NAME": self.fx.event_name,
               "GITHUB_REF": self.fx.ref, "GITHUB_SHA": self.github["sha"],
               "RUNNER_OS": "macOS" if label.startswith("macos") else "Linux"}
        ctx = {**ctx, "runner": {"os": env["RUNNER_OS"], "temp": str(temp)},
               "github": {**self.github, "workspace": str(work)}}
        for scope in (doc.get("env") or {}, job.get("env") or {}):
            env.update({k: _str(render(v, {**ctx, "env": env})) for k, v in scope.items()})
        env.update(self.fx.label_env.get(label, {}))
        shell = ((doc.get("defaults") or {}).get("run") or {}).get("shell")
        state = {"env": env, "work": work, "temp": temp, "steps": {}, "ok": True,
                 "shell": shell, "label": label, "failed": "", "tail": ""}
        for i, step in enumerate(job.get("steps", [])):
            self.step(state, ctx, step, f"{leg} step {i + 1}")
        outputs = render(job.get("outputs", {}), {**ctx, "steps": state["steps"]})
        result = "success" if state["ok"] else "failure"
        self.fx.log.append(f"{leg}: {result}" + (f" at {state['failed']}" if state["failed"]
                                                 else ""))
        return JobResult(result, outputs, state["failed"], state["tail"])

    def step(self, state: dict[str, Any], ctx: dict[str, Any], step: dict[str, Any],
             where: str) -> None:
        ctx = {**ctx, "steps": state["steps"], "env": state["env"]}
        status = {"always": lambda: True, "cancelled": lambda: False,
                  "success": lambda: state["ok"], "failure": lambda: not state["ok"]}
        if not condition(step.get("if", "success()"), ctx, status):
            return
        env = {**state["env"], **{k: _str(render(v, ctx)) for k, v in
                                  (step.get("env") or {}).items()}}
        env.update(self.fx.label_env.get(state["label"], {}))
        label = step.get("name") or step.get("uses") or step.get("run", "").splitlines()[0]
        try:
            if "uses" in step:
                outputs = self.actions.use(step["uses"], render(step.get("with", {}), ctx),
                                           state, env, where)
            else:
                outputs = self.script(_str(render(step["run"], ctx)), env, state,
                                      step.get("shell") or state["shell"], where)
        except subprocess.CalledProcessError as exc:
            state.update(ok=False, failed=f"{where}: {label}", tail=exc.output or "")
            outputs = {}
        if step.get("id"):
            state["steps"][step["id"]] = {"outputs": outputs}

    def script(self, text: str, env: dict[str, str], state: dict[str, Any],
               shell: str | None, where: str, cwd: Path | None = None) -> dict[str, str]:
        """One `run:` script as the runner runs it; its GITHUB_* files read back."""
        temp: Path = state["temp"]
        self.count += 1
        script = temp / f"step{self.count}.sh"
        script.write_text(text)
        files = {k: temp / f"{k.lower()}{self.count}" for k in
                 ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_PATH", "GITHUB_STEP_SUMMARY")}
        for path in files.values():
            path.touch()
        run_env = {**env, **{k: str(v) for k, v in files.items()}}
        cmd = (["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)]
               if shell == "bash" else ["bash", "-e", str(script)])
        proc = subprocess.run(cmd, cwd=cwd or state["work"], env=run_env, capture_output=True,
                              text=True, check=False, timeout=1800)
        log = self.fx.root / "logs" / f"{self.count:03d}.log"
        log.parent.mkdir(exist_ok=True)
        log.write_text(f"# {where}\n$ {text}\n{proc.stdout}\n{proc.stderr}")
        self.fx.log.append(f"  {where}: exit {proc.returncode} ({log.name})")
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd,
                                                (proc.stdout + proc.stderr)[-6000:])
        state["env"].update(read_pairs(files["GITHUB_ENV"]))
        for line in files["GITHUB_PATH"].read_text().splitlines():
            state["env"]["PATH"] = f"{line.strip()}:{state['env']['PATH']}"
        summary = self.fx.root / "step-summary.md"
        with summary.open("a") as fh:
            fh.write(files["GITHUB_STEP_SUMMARY"].read_text())
        return read_pairs(files["GITHUB_OUTPUT"])

    def upload(self, name: str, paths: list[Path], base: Path, overwrite: bool) -> None:
        target = self.artifacts / name
        if target.exists() and not overwrite:
            raise WorkflowError(f"artifact {name} exists")
        shutil.rmtree(target, ignore_errors=True)
        files = [p for path in paths for p in ([path] if path.is_file() else
                                               sorted(path.rglob("*")) if path.is_dir() else [])
                 if p.is_file()]
        for f in files:
            (target / f.relative_to(base)).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, target / f.relative_to(base))

    def download(self, pattern: str, dest: Path) -> None:
        for art in sorted(self.artifacts.iterdir()):
            if fnmatch.fnmatch(art.name, pattern):
                shutil.copytree(art, dest, dirs_exist_ok=True)


def read_pairs(path: Path) -> dict[str, str]:
    """key=value lines and key<<DELIM heredocs, as GitHub reads GITHUB_OUTPUT / GITHUB_ENV."""
    out, lines = {}, iter(path.read_text().splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            key, delim = line.split("<<", 1)
            body = list(itertools.takewhile(lambda x, d=delim: x != d, lines))
            out[key] = "\n".join(body)
        elif "=" in line:
            key, value = line.split("=", 1)
            out[key] = value
    return out


def _needs(job: dict[str, Any]) -> list[str]:
    needs = job.get("needs", [])
    return [needs] if isinstance(needs, str) else list(needs)


def _matrix(spec: dict[str, Any]) -> list[dict[str, Any]]:
    if not spec:
        return [{}]
    if set(spec) & {"include", "exclude"}:
        raise WorkflowError("matrix include/exclude is not emulated")
    for key, values in spec.items():
        if not isinstance(values, list) or not values:
            raise WorkflowError(f"matrix {key}: {values!r} is not a non-empty list")
    keys = list(spec)
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*spec.values())]


def _str(v: Any) -> str:
    from gha_expr import to_string

    return to_string(v)
