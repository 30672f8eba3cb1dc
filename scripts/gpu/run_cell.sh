#!/usr/bin/env bash
# On the GPU machine (Python 3.12, no package index), from the repository root.
#   scripts/gpu/run_cell.sh stage <mlx version>   keep the wheels and CUDA part(s) carried
#                                                 in this call under $STAGE
#   scripts/gpu/run_cell.sh run <cell>            install into /tmp/site-<mlx> (no index, no
#                                                 deps) and run the cell on CUDA with the gpu
#                                                 profile into $OUT as <cell>@cuda.json
# $SUBJECTS (default none,mlxcompat) and $MODELS (default: the cell's) narrow the run.
set -euo pipefail
stage=${STAGE:-/tmp/mlxcompat-stage}
case "$1" in
stage)
  mkdir -p "$stage/mlx-$2" "$stage/common"
  for dir in common vlm; do
    if [ -d ".gpu/$dir" ]; then cp ".gpu/$dir"/* "$stage/common/"; fi
  done
  cp .gpu/mlx-"$2"/* "$stage/mlx-$2/"
  ls -la "$stage"/*
  python3 -c 'import sys; print(sys.version)'
  for m in pytest pytest_benchmark yaml packaging numpy transformers tokenizers jinja2 PIL sentencepiece; do
    python3 -c "import $m; print('$m', getattr($m, '__version__', 'present'))" 2>&1 | tail -1
  done
  ;;
run)
  cell=$2
  read -r mlx < <(PYTHONPATH=src python3 -c "
from mlxcompat.matrix import load_matrix
print(load_matrix('matrix.yaml').cell('$cell').pins['mlx'])")
  site=/tmp/site-$mlx
  rm -rf "$site" && mkdir -p "$site"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
    "$stage"/mlx-"$mlx"/mlx-*.whl $(ls "$stage"/common/*.whl | grep -v -e vllm_mlx -e 'mlx_lm-' -e 'mlx_vlm-')
  lm=$(PYTHONPATH=src python3 -c "
from mlxcompat.matrix import load_matrix
c = load_matrix('matrix.yaml').cell('$cell'); print(c.pins['mlx-lm'], c.pins.get('mlx-vlm', ''))")
  read -r lm_v vlm_v <<<"$lm"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" \
    "$stage"/common/mlx_lm-"$lm_v"-*.whl ${vlm_v:+"$stage"/common/mlx_vlm-"$vlm_v"-*.whl}
  cat "$stage"/mlx-"$mlx"/cuda.part0* | xz -d | tar -C "$site" -xf -
  mkdir -p /tmp/subjects && python3 -m pip install -q --no-index --no-deps --no-compile \
    --target /tmp/subjects/vllm-mlx-0.6.0 "$stage"/common/vllm_mlx-0.6.0-*.whl
  py_site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
  LD_LIBRARY_PATH=$(ls -d "$py_site"/nvidia/*/lib 2>/dev/null | paste -sd: -)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # The fork server's parent is multi-threaded there (CUDA libraries): plain processes.
  export LD_LIBRARY_PATH PYTHONPATH="$site:$PWD/src" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1 \
    MLXCOMPAT_FORK=0
  python3 -c 'import mlx.core as mx; print("mlx", mx.__version__, mx.default_device(), mx.cuda.is_available())'
  mkdir -p /tmp/keep
  python3 -m mlxcompat.cli run --cell "$cell@cuda" --backend cuda --bench "${BENCH:-gpu}" \
    --subjects "${SUBJECTS:-none,mlxcompat}" ${MODELS:+--models "$MODELS"} \
    --subject-dir /tmp/subjects --out "/tmp/keep/$cell@cuda.json"
  # Returned file names may not contain '@': fetch them back as <cell>_AT_cuda*.json and
  # rename them into reports/raw here.
  out=${OUT:-reports/raw}
  mkdir -p "$out"
  for f in /tmp/keep/"$cell"@cuda*; do b=$(basename "$f"); cp "$f" "$out/${b/@/_AT_}"; done
  ;;
esac
