"""Cell runs the nox process hands on before they end, so the next cell installs and checks
beside this one's last checks and its timed rounds (`mlxcompat.benchlock` keeps the rounds
apart from everything else).

A cell session starts `mlxcompat run` and waits only until the run says a CPU would fall
idle (its last subject processes are checking, fewer than it may run at once: see
`mlxcompat.bench_share`) or its timed rounds begin, or until it exits; the session then
returns and nox starts the next cell, at most two at once. The run goes on in the
background. The `drift` and `report` sessions wait for every such run and fail, naming the
cell, for any that exited with anything but 0, as `session.run` would have failed its own
session; the report then finds that cell's JSON missing or incomplete as well. Nothing is
left running: the nox process waits for them on its way out too.

Runs hand on only where overlap helps and someone waits for them: the CPU backend, Linux
with ≥ 2 CPUs (`benchlock.enabled`), and a report to follow (not MLXCOMPAT_SKIP_REPORT=1);
never a cell measured with a gating profile, which runs alone as its baseline did (rounds
timed beside another cell's checks are wider).
"""

from __future__ import annotations

import atexit
import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlxcompat import benchlock
from mlxcompat.cpuwatch import run_cpus
from mlxcompat.workers import bench_cpu

# How long nox waits for a run to end after passing on Ctrl-C (then SIGTERM, then SIGKILL).
# With nox's own 0.3 s the runner was killed mid-cleanup: its temporary folder stayed
# behind on every Ctrl-C of `matrix(mlx-lm-0.32.2)` tried (2026-12-07); its cleanup takes
# under a second.
INTERRUPT_GRACE_S = 30.0
INTERRUPTED = (130, -2)  # `mlxcompat run`'s exit after Ctrl-C, or SIGINT's own


@dataclass
class CellRuns:
    """The runs this nox process handed on, and the ones that failed after it did."""

    running: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        every = run_cpus()
        if every:  # what this process and its children may use, before any confining
            os.environ.setdefault("MLXCOMPAT_CPUS", ",".join(map(str, sorted(every))))
        atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        for cell in self.wait_all():  # a report would have failed on these; none ran
            print(f"mlxcompat: {cell}: its run did not end with its results", flush=True)

    def overlap(self, device: str) -> bool:
        return device == "cpu" and benchlock.enabled() and bench_cpu(device) is not None \
            and os.environ.get("MLXCOMPAT_SKIP_REPORT") != "1"

    def before_install(self) -> None:
        """Off the bench CPU while a run still times its rounds there (uv and the next run
        inherit it); back on every CPU once none does."""
        self._reap()
        cpu = bench_cpu("cpu")
        if cpu is None or not benchlock.supported():
            return
        if benchlock.held_elsewhere():
            benchlock.confine(cpu)
        else:
            benchlock.unconfine()

    def launch(self, session: Any, name: str, argv: list[str], env: dict[str, str],
               overlap: bool, gating: bool) -> None:
        """Run a cell: handed on where it may overlap; else in the session, to its end. A
        gating profile is held against a baseline that ran alone, so its cell runs alone
        too, after every run handed on before it."""
        if overlap and not gating:
            self.start(session, name, argv, env)
            return
        if overlap:
            self.finish(session)
        session.run(*argv, env=env, interrupt_timeout=INTERRUPT_GRACE_S,
                    terminate_timeout=INTERRUPT_GRACE_S)

    def start(self, session: Any, name: str, argv: list[str], env: dict[str, str]) -> None:
        """Run `argv` in the session's venv until it hands on (a CPU of its own falls idle,
        or its timed rounds begin) or it ends. At most two cells run at once: with two still
        going it waits for either to end. (Waiting for the older one left a CPU idle for 8 s
        of a full run: mlx-vlm-0.3.10 ended while 0.32.2, started before it, still timed its
        rounds on one CPU.)"""
        self._reap()
        while len(self.running) >= 2:
            time.sleep(0.2)
            self._reap()
        venv = Path(session.virtualenv.location)
        handoff = venv / "handoff"
        handoff.unlink(missing_ok=True)
        full = {**os.environ, **env, "VIRTUAL_ENV": str(venv),
                "PATH": os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")]),
                "MLXCOMPAT_HANDOFF": str(handoff)}
        session.log(" ".join(argv) + "  (handed on once it leaves a CPU idle)")
        proc = subprocess.Popen([str(venv / "bin" / argv[0]), *argv[1:]], env=full)
        self.running.append((name, proc))  # from now: nox's exit (Ctrl-C here) waits for it
        while proc.poll() is None and not handoff.exists():
            time.sleep(0.2)
        if proc.returncode is not None:
            self.running.remove((name, proc))
            if proc.returncode != 0:
                session.error(f"{name}: mlxcompat run exited with {proc.returncode}")

    def _reap(self) -> None:
        still = []
        for name, proc in self.running:
            if proc.poll() is None:
                still.append((name, proc))
            elif proc.returncode in INTERRUPTED:
                self.failed.append(f"{name} (interrupted)")
            elif proc.returncode != 0:
                self.failed.append(f"{name} (exit {proc.returncode})")
        self.running = still

    def wait_all(self) -> list[str]:
        """Wait for every run handed on; the cells whose runs failed (each named once)."""
        for _name, proc in self.running:
            proc.wait()
        self._reap()
        failed, self.failed = self.failed, []
        return failed

    def finish(self, session: Any) -> None:
        """What the drift and report sessions do first."""
        if self.running:
            session.log(f"waiting for {len(self.running)} cell run(s) still timing rounds")
        failed = self.wait_all()
        if failed:
            session.error("cell runs failed after their checks: " + ", ".join(failed))
