"""mlx's CPU backend shares its cache of compiled kernels, `<temp dir>/mlx/<version>/cpu`, between
every process of the machine, and a process can open a kernel library that another process is
still writing: `RuntimeError: Could not load C++ shared library …: file too short`. Bare
reproduction (mlx[cpu] only, no mlx-lm, no mlxcompat):

    python mlx_cpu_kernel_cache_race.py [processes per round] [rounds]

Each round makes an empty folder, starts the processes with TMPDIR pointing there (so the
cache is cold) and has them, at one moment, evaluate the same compiled function: a chain of
element-wise ops that mlx fuses into one kernel, so each of them compiles the same library
at once. Expected: every process prints its result. Seen: some processes fail, in one of
three ways, counted per round: g++ fails on a source another process is writing, dlopen
finds the library "file too short", or dlsym does not find the function in it. The harness
met it on a fresh machine, where a cell's subject processes and servers compile the same
kernels at once (mlx 0.29.1 under mlx-lm 0.28.0's server, mlx 0.32.2 in a bfloat16 parity
row); its output is appended to reports/evidence/upstream-repros.txt.
"""

import os
import subprocess
import sys
import tempfile
import time
from collections import Counter

CHILD = r"""
import sys, time
import mlx.core as mx
start = float(sys.argv[1])
fused = mx.compile(lambda x, y: mx.log(mx.abs(mx.exp(x * y + 1.5) - y) + 2.0) / (x * x + 3.0))
a = mx.arange(4096, dtype=mx.float32) / 4096
time.sleep(max(0.0, start - time.time()))
try:
    out = fused(a, a)
    mx.eval(out)
    print("ok", float(out.sum()))
except RuntimeError as exc:
    print("error", " ".join(str(exc).split())[:400])
"""


def _kind(line: str) -> str:
    if line.startswith("ok"):
        return "ok"
    if "file too short" in line:
        return "library opened half written (file too short)"
    if "Failed to load compiled function" in line:
        return "function not found in the library (half written)"
    if "Failed to compile function" in line:
        return "g++ failed (its source half written)"
    return line[:120]


def one_round(processes: int) -> Counter:
    with tempfile.TemporaryDirectory(prefix="mlx-cache-race-") as folder:
        env = {**os.environ, "TMPDIR": folder}
        start = time.time() + 2.0  # every process is imported and waiting by then
        procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(start)], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for _ in range(processes)]
        found: Counter = Counter()
        for proc in procs:
            out = proc.communicate(timeout=120)[0].strip().splitlines()
            last = out[-1] if out else f"exit {proc.returncode}"
            found[_kind(last)] += 1
        return found


def main() -> None:
    import mlx.core as mx

    processes = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    print(f"mlx {mx.__version__}, {processes} processes per round, {rounds} rounds")
    total: Counter = Counter()
    for i in range(rounds):
        found = one_round(processes)
        total.update(found)
        print(f"round {i + 1}: {dict(found)}")
    bad = sum(n for k, n in total.items() if k != "ok")
    print(f"processes that could not open the kernel: {bad} of {sum(total.values())}")


if __name__ == "__main__":
    main()
