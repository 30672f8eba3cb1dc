#!/usr/bin/env bash
# On a machine WITH a package index: fetch what a GPU machine without one needs to run the
# quick cells on MLX's CUDA backend, into .gpu/ (git-ignored):
#   .gpu/wheels/   mlx (cp312), mlx-lm (pure Python)        — small, carried as they are
#   .gpu/cuda.part00, .gpu/cuda.part01                      — the ~90 MB mlx-cuda-13 wheel,
#                     unpacked, xz -9 compressed and split in two so each part fits one call.
# Versions come from the cell in matrix.yaml (its mlx-lm and mlx pins).
set -euo pipefail
cd "$(dirname "$0")/../.."
cell=${1:-mlx-lm-0.32.2}
read -r lm mlx < <(python3 - "$cell" <<'PY'
import sys
sys.path.insert(0, "src")
from mlxcompat.matrix import load_matrix
m = load_matrix("matrix.yaml")
c = m.cell(sys.argv[1])
print(c.pins["mlx-lm"], c.pins["mlx"])
PY
)
echo "cell $cell: mlx-lm $lm, mlx $mlx (cuda13)"
rm -rf .gpu && mkdir -p .gpu/wheels .gpu/unpacked
platforms=(--platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64
           --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .gpu/wheels "mlx==$mlx"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp "${platforms[@]}" -d .gpu "mlx-cuda-13==$mlx"
python3 -m pip download -q --no-deps -d .gpu/wheels "mlx-lm==$lm"
(cd .gpu/unpacked && python3 -m zipfile -e ../mlx_cuda_13-*.whl .)
tar -C .gpu/unpacked -cf - . | xz -9 -T0 > .gpu/cuda.tar.xz
split -n 2 -d .gpu/cuda.tar.xz .gpu/cuda.part
rm -rf .gpu/unpacked .gpu/cuda.tar.xz .gpu/mlx_cuda_13-*.whl
ls -la .gpu .gpu/wheels
