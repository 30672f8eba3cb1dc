#!/usr/bin/env bash
# On a machine WITH a package index: fetch what a GPU machine without one needs to run the
# cuda runner's cells (matrix.yaml `runners.cuda`) on MLX's CUDA backend, into .gpu/ (ignored):
#   .gpu/common/      mlx-lm and subject wheels (pure Python), pytest-benchmark & co
#   .gpu/vlm/         mlx-vlm and the binary wheels it imports (Pillow, sentencepiece)
#   .gpu/mlx-<v>/     the mlx wheel (cp312) and its ~90 MB mlx-cuda-13 wheel, unpacked,
#                     xz-compressed and split in two (cuda.part00, cuda.part01): one per call.
# Versions come from the cells in matrix.yaml.
set -euo pipefail
cd "$(dirname "$0")/../.."
mapfile -t pins < <(python3 - <<'PY'
import sys
sys.path.insert(0, "src")
from mlxcompat.matrix import load_matrix
m = load_matrix("matrix.yaml")
for cell in m.cells_for("cuda"):
    print(cell.id, cell.pins["mlx"], cell.pins["mlx-lm"], cell.pins.get("mlx-vlm", ""))
PY
)
rm -rf .gpu && mkdir -p .gpu/common .gpu/vlm
plat=(--only-binary=:all: --python-version 3.12 --implementation cp
      --platform manylinux_2_35_x86_64 --platform manylinux_2_28_x86_64
      --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64)
get() { python3 -m pip download -q --no-deps "${plat[@]}" -d "$@"; }
get .gpu/common vllm-mlx==0.6.0 pytest pluggy iniconfig pytest-benchmark py-cpuinfo pyyaml packaging \
  pydantic pydantic-core annotated-types typing-inspection typing-extensions
get .gpu/vlm pillow sentencepiece
for line in "${pins[@]}"; do
  read -r cell mlx lm vlm <<<"$line"
  echo "cell $cell: mlx $mlx, mlx-lm $lm${vlm:+, mlx-vlm $vlm} (cuda13)"
  get .gpu/common "mlx-lm==$lm"
  [ -n "$vlm" ] && get .gpu/vlm "mlx-vlm==$vlm"
  dir=.gpu/mlx-$mlx
  [ -d "$dir" ] && continue
  mkdir -p "$dir/unpacked"
  get "$dir" "mlx==$mlx" "mlx-cuda-13==$mlx"
  (cd "$dir/unpacked" && python3 -m zipfile -e ../mlx_cuda_13-*.whl .)
  tar -C "$dir/unpacked" -cf - . | xz -9 -T0 > "$dir/cuda.tar.xz"
  split -n 2 -d "$dir/cuda.tar.xz" "$dir/cuda.part"
  rm -rf "$dir/unpacked" "$dir/cuda.tar.xz" "$dir"/mlx_cuda_13-*.whl
done
du -sh .gpu/* .gpu/*/*
