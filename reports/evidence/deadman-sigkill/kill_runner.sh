#!/bin/bash
# A runner with plain subject processes (MLXCOMPAT_FORK=0, as on macOS) that freezes waiting
# subjects (MLXCOMPAT_BENCH_FREEZE=1, as on a GPU backend), SIGKILLed during its timed rounds:
# what is left of its subjects 3 s later? Run from the repository root, the cell's venv made
# (`nox -s "matrix(mlx-lm-0.31.3)" --install-only`); it writes under $OUT (default /tmp/dm).
set -u
V=${VENV:-.nox/matrix-mlx-lm-0-31-3}/bin
OUT=${OUT:-/tmp/dm}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 MLXCOMPAT_FORK=0 MLXCOMPAT_BENCH_FREEZE=1 MLXCOMPAT_OVERLAP=0
"$V/mlxcompat" --matrix matrix.yaml run --cell mlx-lm-0.31.3 \
  --subjects none,mlxcompat,mlxcompat-forced --models llama --checks install,import \
  --bench quick --out "$OUT/cell.json" > "$OUT/runner.log" 2>&1 &
runner=$!
stopped=""
for _ in $(seq 1 600); do
  stopped=$(ps -eo pid,stat,args | awk '$2 ~ /^T/ && /mlxcompat/ {print $1}')
  [ -n "$stopped" ] && break
  sleep 0.1
done
echo "frozen subjects before the kill: $(echo $stopped)"
ps -eo pid,pgid,stat,args | grep -E "mlxcompat.suite|mlxcompat.deadman" | grep -v grep | cut -c1-120
kill -KILL $runner
wait $runner 2>/dev/null
sleep 3
echo "after SIGKILL of the runner ($runner):"
left=$(ps -eo pid,pgid,stat,args | grep -E "mlxcompat.suite|mlxcompat.deadman" | grep -v grep)
echo "${left:-  no subject process, no switch left}" | cut -c1-120
