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
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

EVERY_S = 0.5


def _cpus() -> dict[str, tuple[int, int]]:
    found = {}
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith("cpu") and line[3].isdigit():
            name, *fields = line.split()
            ticks = list(map(int, fields[:8]))
            found[name] = (sum(ticks) - ticks[3] - ticks[4], sum(ticks))  # less idle, iowait
    return found


def run(out: str, cmd: list[str]) -> int:
    t0 = time.monotonic()
    samples: list[list[float]] = []
    done = threading.Event()

    def sample() -> None:
        before = _cpus()
        while not done.wait(EVERY_S):
            now = _cpus()
            samples.append([round(time.monotonic() - t0, 2)] + [
                round((now[k][0] - before[k][0]) / max(1, now[k][1] - before[k][1]), 3)
                for k in sorted(now)])
            before = now

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
