"""Ctrl-C a command the way a terminal does, then list what it left behind.

    python3 scripts/interrupt_run.py [--signal TERM] [--leader] SECONDS CMD [ARGS...]
    python3 scripts/interrupt_run.py 25 nox -R -s "matrix(mlx-lm-0.32.2)"

CMD runs in its own session with SIGINT at its default (a shell's background job ignores
SIGINT, which hides what an interrupted run leaves), its output in a log whose path is
printed. After SECONDS the whole group gets SIGINT, as a terminal's Ctrl-C sends it (or the
signal named: `timeout` sends TERM to its group). `--leader` signals CMD's own process
alone, as `kill PID` does, and as GitHub Actions does when it cancels a step whose shell
`exec`s the command (its docs: SIGINT to the step's entry process, SIGTERM 7.5 s later,
the process tree killed 2.5 s after that). Printed: CMD's exit code and how long it took
to exit, then every process still alive whose environment carries this run's mark (all
that CMD started inherit it) and every new /tmp/mlxcompat* entry. Exit 1 if anything was
left. Linux only (reads /proc).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path


def marked(mark: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if mark.encode() in (entry / "environ").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def ours() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("mlxcompat*")}


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    sig, leader = signal.SIGINT, False
    while argv and argv[0] in ("--signal", "--leader"):
        if argv[0] == "--leader":
            leader, argv = True, argv[1:]
        else:
            sig, argv = signal.Signals[f"SIG{argv[1].upper()}"], argv[2:]
    delay, command = float(argv[0]), argv[1:]
    mark = f"mlxcompat-interrupt-{uuid.uuid4().hex}"
    before = ours()
    path = Path(tempfile.gettempdir()) / f"interrupt-run-{mark[-8:]}.log"
    print(f"output: {path}")
    with path.open("w") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "MLXCOMPAT_INTERRUPT_MARK": mark},
                                start_new_session=True,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        time.sleep(delay)
        (os.kill if leader else os.killpg)(proc.pid, sig)
        sent = time.monotonic()
        code = proc.wait()
    print(f"exit {code} {time.monotonic() - sent:.1f} s after {sig.name}"
          f"{' to CMD alone' if leader else ''}")
    time.sleep(3)  # killed processes reaped, folders removed
    left = marked(mark)
    for pid in left:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        print(f"left: pid {pid} state {stat} {cmd[:120]}")
    new = sorted(ours() - before)
    for name in new:
        print(f"left: {tempfile.gettempdir()}/{name}")
    return 1 if left or new else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
