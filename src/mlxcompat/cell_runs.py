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

A SIGINT or SIGTERM that reaches nox alone (`kill PID`, a CI step that `exec`s nox, which
GitHub Actions signals and not its children) is passed on to every cell run it started,
handed on or not (`pass_signals_on`): before, nox waited for handed-on runs to finish their
cells (20 s after a SIGINT 80 s into a full matrix, 2026-12-07), and a SIGTERM left them
running on their own. A runner ignores a second signal while it cleans up
(`workers.stop_signals`), so the group's own signal and nox's together do no harm.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import threading
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
STOPPED = {130: "interrupted", -2: "interrupted",  # `mlxcompat run` after Ctrl-C, SIGINT's
           143: "terminated", -15: "terminated"}  # after SIGTERM (SystemExit), SIGTERM's


@dataclass
class CellRuns:
    """The runs this nox process handed on, and the ones that failed after it did."""

    running: list[tuple[str, subprocess.Popen[bytes]]] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    here: subprocess.Popen[bytes] | None = None  # the run the session itself waits for
    stopping: bool = False  # nox got SIGINT or SIGTERM: runs are stopped, not waited out

    def __post_init__(self) -> None:
        every = run_cpus()
        if every:  # what this process and its children may use, before any confining
            os.environ.setdefault("MLXCOMPAT_CPUS", ",".join(map(str, sorted(every))))
        atexit.register(self._at_exit)

    def _at_exit(self) -> None:
        if self.stopping:
            for _name, proc in self.running:
                _stop(proc)
        for cell in self.wait_all():  # a report would have failed on these; none ran
            print(f"mlxcompat: {cell}: its run did not end with its results", flush=True)

    def pass_signals_on(self) -> None:
        """From now on, SIGINT or SIGTERM to this (nox's) process goes on to every cell run
        it started, then stops nox as it would have stopped it (KeyboardInterrupt; SIGTERM
        as SystemExit 143, so this process's exit still stops the runs). A signal this
        process was started to ignore stays ignored; only the main thread can do this."""
        if threading.current_thread() is not threading.main_thread():
            return
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, self._signalled)
        if signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._signalled)

    def _signalled(self, signum: int, _frame: object) -> None:
        self.stopping = True
        for proc in [p for _n, p in self.running] + ([self.here] if self.here else []):
            if proc.poll() is None:
                proc.send_signal(signum)
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

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
        self.run_here(session, name, argv, env)

    def run_here(self, session: Any, name: str, argv: list[str], env: dict[str, str]) -> None:
        """Run `argv` in the session's venv to its end. Not `session.run`: its child is out
        of this object's reach, so a signal to nox alone never reached it (nox waited out
        its interrupt timeout, then sent SIGTERM). Stopped (Ctrl-C, SIGTERM), the run gets
        INTERRUPT_GRACE_S to clean up (nox's own 0.3 s killed it mid-way), then SIGTERM,
        then SIGKILL."""
        self.here = self._popen(session, argv, env, {})
        try:
            code = self.here.wait()
        except BaseException:
            _stop(self.here)
            raise
        finally:
            self.here = None
        if code != 0:
            word = STOPPED.get(code)
            session.error(f"{name}: mlxcompat run {word}" if word else
                          f"{name}: mlxcompat run exited with {code}")

    @staticmethod
    def _popen(session: Any, argv: list[str], env: dict[str, str],
               extra: dict[str, str]) -> subprocess.Popen[bytes]:
        """`argv[0]` from the session's venv, with the venv first on PATH, as nox runs it."""
        venv = Path(session.virtualenv.location)
        full = {**os.environ, **env, "VIRTUAL_ENV": str(venv),
                "PATH": os.pathsep.join([str(venv / "bin"), os.environ.get("PATH", "")]),
                **extra}
        session.log(" ".join(argv) + ("  (handed on once it leaves a CPU idle)"
                                      if "MLXCOMPAT_HANDOFF" in extra else ""))
        return subprocess.Popen([str(venv / "bin" / argv[0]), *argv[1:]], env=full)

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
        handoff = Path(session.virtualenv.location) / "handoff"
        handoff.unlink(missing_ok=True)
        proc = self._popen(session, argv, env, {"MLXCOMPAT_HANDOFF": str(handoff)})
        self.running.append((name, proc))  # from now: nox's signals reach it, its exit waits
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
            elif proc.returncode in STOPPED:
                self.failed.append(f"{name} ({STOPPED[proc.returncode]})")
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


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """Wait INTERRUPT_GRACE_S for a run that was passed a signal, then SIGTERM, then SIGKILL."""
    for escalate in (proc.terminate, proc.kill):
        try:
            proc.wait(timeout=INTERRUPT_GRACE_S)
            return
        except subprocess.TimeoutExpired:
            escalate()
    proc.wait()
