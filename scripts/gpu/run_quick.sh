#!/usr/bin/env bash
# On the GPU machine (Python 3.12, no package index), from the repository root, after both
# halves of the CUDA wheel were staged in $STAGE (default /tmp/mlxcompat-stage):
#   installs mlx + mlx-cuda-13 + mlx-lm into /tmp/site (no index, no deps: the machine has
#   numpy, transformers & co), finds the nvidia/*/lib folders for libmlx, and runs the quick
#   cell on the CUDA backend into $OUT (or reports/raw), named <cell>@cuda.json.
set -euo pipefail
stage=${STAGE:-/tmp/mlxcompat-stage}
cell=${1:-mlx-lm-0.32.2}
out=${OUT:-reports/raw}
site=/tmp/site
rm -rf "$site" && mkdir -p "$site" "$out"
# pip first: --target would replace an existing mlx/ folder; the CUDA files go in on top.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
  --target "$site" .gpu/wheels/*.whl
cat "$stage"/cuda.part0* | xz -d | tar -C "$site" -xf -
py_site=$(python3 -c 'import site; print(site.getsitepackages()[0])')
LD_LIBRARY_PATH=$(ls -d "$py_site"/nvidia/*/lib 2>/dev/null | paste -sd: -)${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export LD_LIBRARY_PATH PYTHONPATH="$site:$PWD/src" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
python3 -c 'import mlx.core as mx; print("mlx", mx.__version__, mx.default_device(), mx.cuda.is_available())'
python3 -m mlxcompat.cli run --cell "$cell@cuda" --backend cuda --bench gpu \
  --subjects "${SUBJECTS:-none,mlxcompat}" --out "$out/$cell@cuda.json"
