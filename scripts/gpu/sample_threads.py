"""Which threads burn CPU while a cell runs: a sampler beside the harness, outside it.

Every `interval` seconds, for every process whose command line holds `match` (the default,
"mlxcompat", takes the runner, the subject workers, the need probe and the servers), it reads
each thread's name and CPU time from /proc/<pid>/task/<tid>/stat and writes one JSON line per
process: its pid, state, thread count, and the threads that used CPU since the last sample
(name, tid, CPU-s per s, the CPU they last ran on); a process's first line also holds its
command line. Until SIGTERM, the file `stop`, or `seconds`.

    python3 scripts/gpu/sample_threads.py OUT.jsonl [interval] [seconds] [match] &
    python3 scripts/gpu/sample_threads.py --read OUT.jsonl ...

`--read F ...` prints, per file and process, its busy threads (≥ 0.9 of a core in ≥ 80% of
the process's samples after their first busy one: working or spinning alike), and the CPUs
all watched processes used per sample (median, 90th percentile, max).
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

TICK = os.sysconf("SC_CLK_TCK")
BUSY, STEADY = 0.9, 0.8


def thread_seconds(pid: int | str = "self") -> dict[int, float]:
    """CPU seconds (user + system) of each thread of a process, by thread id."""
    found = {}
    for task in Path(f"/proc/{pid}/task").glob("*"):
        got = _stat(task / "stat")
        if got is not None:
            found[int(task.name)] = got[2]
    return found


def _stat(path: Path) -> tuple[str, str, float, int] | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    name = text[text.index("(") + 1:text.rindex(")")]
    fields = text.rsplit(")", 1)[1].split()
    return name, fields[0], (int(fields[11]) + int(fields[12])) / TICK, int(fields[36])


def _commands(match: str) -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
        except OSError:
            continue
        if match in cmd:
            found[int(entry.name)] = cmd
    return found


def _stop(*_: object) -> None:
    raise SystemExit(0)


def sample(out: Path, interval: float, seconds: float, match: str) -> None:
    signal.signal(signal.SIGTERM, _stop)
    last: dict[tuple[int, int], float] = {}
    seen: set[int] = set()
    end = time.time() + seconds
    with out.open("w") as sink:
        while time.time() < end and not Path("stop").exists():
            now = time.time()
            lines = []
            for pid, cmd in _commands(match).items():
                head = _stat(Path(f"/proc/{pid}/stat"))
                if head is None:
                    continue
                busy = []
                tasks = list(Path(f"/proc/{pid}/task").glob("*"))
                for task in tasks:
                    got = _stat(task / "stat")
                    if got is None:
                        continue
                    key = (pid, int(task.name))
                    used = got[2] - last.get(key, got[2])
                    last[key] = got[2]
                    if used > 0:
                        busy.append([got[0], int(task.name), round(used / interval, 3), got[3]])
                rec = {"t": round(now, 2), "pid": pid, "state": head[1], "threads": len(tasks),
                       "busy": busy}
                if pid not in seen:
                    seen.add(pid)
                    rec["cmd"] = cmd[:300]
                lines.append(json.dumps(rec) + "\n")
            sink.writelines(lines)
            sink.flush()
            time.sleep(interval)


def read(path: Path) -> None:
    recs = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    cmd: dict[int, str] = {}
    samples: dict[int, list[dict]] = defaultdict(list)
    per_time: dict[float, float] = defaultdict(float)
    for rec in recs:
        cmd.setdefault(rec["pid"], rec.get("cmd", "?"))
        samples[rec["pid"]].append(rec)
        per_time[rec["t"]] += sum(rate for _n, _t, rate, _c in rec["busy"])
    busy_total = 0
    for pid, recs_of in samples.items():
        rates: dict[int, list[float]] = defaultdict(list)
        for i, rec in enumerate(recs_of):
            for _name, tid, rate, _cpu in rec["busy"]:
                rates[tid].append((i, rate))
        busy = []
        for tid, seq in rates.items():
            first = seq[0][0]
            hot = sum(1 for _i, r in seq if r >= BUSY)
            if hot >= STEADY * (len(recs_of) - first) and hot >= 3:
                busy.append(tid)
        busy_total += len(busy)
        role = " ".join(part for part in cmd[pid].split() if not part.startswith("/"))[:90]
        print(f"pid {pid:>7}  {len(recs_of):>4} samples  {len(busy)} busy  {role}")
    used = sorted(per_time.values())
    if used:
        print(f"{len(samples)} processes, {busy_total} busy threads; CPUs used by them "
              f"per sample: median {statistics.median(used):.1f}, "
              f"p90 {used[int(0.9 * (len(used) - 1))]:.1f}, max {used[-1]:.1f}")


if __name__ == "__main__":
    if sys.argv[1] == "--read":
        for name in sys.argv[2:]:
            print(f"== {name}")
            read(Path(name))
    else:
        sample(Path(sys.argv[1]), float(sys.argv[2]) if len(sys.argv) > 2 else 2.0,
               float(sys.argv[3]) if len(sys.argv) > 3 else 600.0,
               sys.argv[4] if len(sys.argv) > 4 else "mlxcompat")
