#!/usr/bin/env bash
# On the GPU machine (Python 3.12, no package index), from the repository root. Every command
# first keeps what this call carried (.gpu/*, see prepare.sh) under $STAGE, so the parts of a
# CUDA wheel too large for one call's carry arrive over two calls of a warm machine.
#   scripts/gpu/run_cell.sh stage                 keep what was carried, nothing else
#   scripts/gpu/run_cell.sh run <cell>            install the cell's releases into
#                                                 /tmp/site-<mlx> (no index, no deps; kept
#                                                 for later calls) and run it on CUDA into
#                                                 $OUT as <cell>_AT_cuda[-$TAG].json
#   scripts/gpu/run_cell.sh overhead <cell> ARGS  benchmarks/harness_overhead.py --backend
#                                                 cuda ARGS in that cell's site
#   scripts/gpu/run_cell.sh exec <cell> CMD ...   any command in that cell's site (a probe)
#   scripts/gpu/run_cell.sh stamp                 HERE, before the calls: write the harness's
#                                                 identity (commit, local changes) to
#                                                 .gpu/harness-stamp, carried with call 1
# Settings: BENCH (profile, default gpu), SUBJECTS (default none,mlxcompat), MODELS (default:
# the cell's), CHECKS (default: the matrix's), TAG (a suffix for a second run of one cell),
# MLXCOMPAT_BENCH_PIN (1: pin the timed rounds to one CPU as the CPU backend does),
# MLXCOMPAT_BENCH_PLACE (free, alone or steady: where the timed thread runs, placement.py), THREADS
# (seconds between samples of every harness process's threads, sample_threads.py, into
# $OUT as <cell>_AT_cuda[-$TAG].threads.jsonl).
# SITE_OF (another cell: run this cell's checks on that cell's releases, an A/B of mlx).
# MATRIX (another matrix file, e.g. scripts/gpu/aa_matrix.py's), EXTRA_PATH (folders added
# to the processes' path: entry points of subjects that are not installed).
# scripts/gpu/collect.sh renames what comes back into reports/raw.
set -euo pipefail
stage=${STAGE:-/tmp/mlxcompat-stage}
out=${OUT:-reports/raw}

keep() {
  mkdir -p "$stage/common"
  for dir in common vlm; do
    if [ -d ".gpu/$dir" ]; then cp .gpu/"$dir"/* "$stage/common/"; fi
  done
  for dir in .gpu/mlx-*; do
    if [ -d "$dir" ]; then mkdir -p "$stage/${dir#.gpu/}" && cp "$dir"/* "$stage/${dir#.gpu/}/"; fi
  done
  ls -la "$stage"/*
}

pins() {  # <cell> -> "mlx mlx-lm mlx-vlm", read with yaml alone (no harness installed yet)
  python3 - "$1" <<'PY'
import sys, yaml
cells = yaml.safe_load(open("matrix.yaml"))["cells"]
for c in cells:
    name = f"mlx-vlm-{c['mlx-vlm']}" if "mlx-vlm" in c else f"mlx-lm-{c.get('mlx-lm')}"
    if c.get("id", name) == sys.argv[1]:
        print(c["mlx"], c["mlx-lm"], c.get("mlx-vlm", "-"))
        break
else:
    sys.exit(f"no cell {sys.argv[1]} in matrix.yaml")
PY
}

site_for() {  # <cell>: install once per (mlx, mlx-lm, mlx-vlm); prints the site folder
  read -r mlx lm vlm < <(pins "$1")
  site=/tmp/site-$mlx-$lm-$vlm
  if [ ! -f "$site/.done" ]; then
    rm -rf "$site" && mkdir -p "$site"
    wheels=()
    for w in "$stage"/common/*.whl; do
      case "$(basename "$w")" in vllm_mlx-*|mlx_lm-*|mlx_vlm-*) ;; *) wheels+=("$w") ;; esac
    done
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
      "$stage"/mlx-"$mlx"/mlx-*.whl "${wheels[@]}"
    python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
      "$stage"/common/mlx_lm-"$lm"-*.whl
    if [ "$vlm" != "-" ]; then
      python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
        "$stage"/common/mlx_vlm-"$vlm"-*.whl
    fi
    cat "$stage"/mlx-"$mlx"/cuda.part0* | xz -d | tar -C "$site" -xf -
    touch "$site/.done"
  fi
  if [ ! -d /tmp/subjects/vllm-mlx-0.6.0 ]; then
    mkdir -p /tmp/subjects && python3 -m pip install -q --no-index --no-deps --no-compile \
      --target /tmp/subjects/vllm-mlx-0.6.0 "$stage"/common/vllm_mlx-0.6.0-*.whl
  fi
  echo "$site"
}

environment() {  # <site>: CUDA libraries of the wheel, no hub, plain processes
  py_site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  LD_LIBRARY_PATH=$({ ls -d "$1"/nvidia/*/lib "$py_site"/nvidia/*/lib 2>/dev/null || true; } \
    | paste -sd: -)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The fork server's parent is multi-threaded there (CUDA libraries): plain processes.
  export LD_LIBRARY_PATH PYTHONPATH="$1:$PWD/src${EXTRA_PATH:+:$EXTRA_PATH}" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 \
    MLXCOMPAT_FORK=0
  python3 -c 'import mlx.core as mx; print("mlx", mx.__version__, mx.default_device(), mx.cuda.is_available())'
}

if [ "${1:-}" = stamp ]; then
  mkdir -p .gpu
  PYTHONPATH=src python3 -c 'from mlxcompat.installs import harness_identity as h; print(h())' \
    > .gpu/harness-stamp
  cat .gpu/harness-stamp
  exit 0
fi
keep
if [ -f .gpu/harness-stamp ]; then cp .gpu/harness-stamp "$stage/"; fi
if [ -f "$stage/harness-stamp" ]; then
  MLXCOMPAT_HARNESS_STAMP="$(cat "$stage/harness-stamp")"
  export MLXCOMPAT_HARNESS_STAMP
fi
case "${1:-stage}" in
stage) ;;
run)
  cell=$2
  site=$(site_for "${SITE_OF:-$cell}" | tail -1)
  environment "$site"
  name="$cell@cuda${TAG:+-$TAG}"
  mkdir -p /tmp/keep "$out"
  start=$(date +%s)
  sampler=
  if [ -n "${THREADS:-}" ]; then
    python3 scripts/gpu/sample_threads.py "$out/${name/@/_AT_}.threads.jsonl" "$THREADS" 590 &
    sampler=$!
    trap 'kill "$sampler" 2>/dev/null || true' EXIT
  fi
  python3 -m mlxcompat.cli --matrix "${MATRIX:-matrix.yaml}" run --cell "$cell@cuda" --backend cuda --bench "${BENCH:-gpu}" \
    --subjects "${SUBJECTS:-none,mlxcompat}" ${MODELS:+--models "$MODELS"} \
    ${CHECKS:+--checks "$CHECKS"} --subject-dir /tmp/subjects --out "/tmp/keep/$name.json"
  if [ -n "$sampler" ]; then kill "$sampler" && wait "$sampler" || true; fi
  echo "run $name: $(( $(date +%s) - start ))s (BENCH=${BENCH:-gpu} SUBJECTS=${SUBJECTS:-none,mlxcompat} MODELS=${MODELS:-} CHECKS=${CHECKS:-} MATRIX=${MATRIX:-} MLXCOMPAT_BENCH_PIN=${MLXCOMPAT_BENCH_PIN:-auto} MLXCOMPAT_BENCH_PLACE=${MLXCOMPAT_BENCH_PLACE:-free})"
  # Returned file names may not contain '@': <cell>_AT_cuda*.json (collect.sh renames).
  for f in /tmp/keep/"$name".*json /tmp/keep/"$name".json; do
    [ -f "$f" ] && b=$(basename "$f") && cp "$f" "$out/${b/@/_AT_}"
  done
  ls -la "$out"
  ;;
overhead)
  cell=$2
  shift 2
  site=$(site_for "$cell" | tail -1)
  environment "$site"
  python3 benchmarks/harness_overhead.py --backend cuda "$@"
  ;;
exec)
  cell=$2
  shift 2
  site=$(site_for "$cell" | tail -1)
  environment "$site"
  "$@"
  ;;
*) echo "usage: $0 stamp | stage | run <cell> | overhead <cell> ARGS | exec <cell> CMD" >&2
   exit 2 ;;
esac
