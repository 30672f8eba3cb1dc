"""Where a matrix run's wall time goes: run a command with its output lines timestamped and
the CPUs' busy share sampled every half second, then read those files back.

    python3 scripts/timeline.py run OUT -- nox -R -s matrix     # writes OUT.log, OUT.cpu.json
    python3 scripts/timeline.py read OUT [OUT ...]              # wall, busy and idle CPU-s,
                                                                 # cells that waited to start

"Waited to start": seconds between a cell's "install ok" and nox handing its run on; with two
runs still going a cell waits for one of them (`cell_runs.CellRuns.start`). Linux only
(/proc/stat). Sampling costs well under 1% of a CPU.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from mlxcompat.cpuwatch import cpu_times

EVERY_S = 0.5


def _busy(cpus: list[int]) -> list[float]:
    """Busy seconds of each CPU since boot (`cpuwatch.cpu_times`)."""
    return [(cpu_times(c) or (0.0, 0.0))[0] for c in cpus]


def run(out: str, cmd: list[str]) -> int:
    t0 = time.monotonic()
    samples: list[list[float]] = []
    done = threading.Event()

    cpus = sorted(os.sched_getaffinity(0))

    def sample() -> None:
        before, then = _busy(cpus), time.monotonic()
        while not done.wait(EVERY_S):
            now, at = _busy(cpus), time.monotonic()
            samples.append([round(at - t0, 2)] + [round(min(1.0, (b - a) / (at - then)), 3)
                                                  for a, b in zip(before, now, strict=True)])
            before, then = now, at

    threading.Thread(target=sample, daemon=True).start()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            bufsize=1)
    with open(out + ".log", "w", encoding="utf-8") as log:
        for line in proc.stdout or ():
            log.write(f"{time.monotonic() - t0:8.2f} {line}")
            log.flush()
    code = proc.wait()
    done.set()
    Path(out + ".cpu.json").write_text(json.dumps(samples), encoding="utf-8")
    print(f"rc {code} wall {time.monotonic() - t0:.1f}")
    return code


def read(out: str) -> str:
    samples = json.loads(Path(out + ".cpu.json").read_text(encoding="utf-8"))
    busy = [sum(s[1:]) for s in samples]
    cpus = len(samples[0]) - 1 if samples else 0
    waited, installed = [], None
    for line in Path(out + ".log").read_text(encoding="utf-8").splitlines():
        at = float(line.split(maxsplit=1)[0])
        found = re.search(r"\] (\S+): install ok", line)
        if found:
            installed = (found.group(1), at)
        elif "handed on once it leaves" in line and installed:
            if at - installed[1] >= 1:
                waited.append(f"{installed[0]} {at - installed[1]:.1f} s")
            installed = None
    return (f"{out}: wall {samples[-1][0]:.0f} s, busy {sum(busy) * EVERY_S:.0f} CPU-s, "
            f"idle {sum(cpus - b for b in busy) * EVERY_S:.0f} CPU-s of {cpus}; "
            f"waited to start: {', '.join(waited) or 'none'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    ran = sub.add_parser("run")
    ran.add_argument("out")
    ran.add_argument("cmd", nargs=argparse.REMAINDER)
    sub.add_parser("read").add_argument("outs", nargs="+")
    args = parser.parse_args()
    if args.what == "run":
        cmd = args.cmd[1:] if args.cmd[:1] == ["--"] else args.cmd
        return run(args.out, cmd)
    for out in args.outs:
        print(read(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
