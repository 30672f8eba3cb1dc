#!/usr/bin/env bash
# Every reproduction of issue 24 (and 21's reseed) against one source tree, in two venvs.
# What it prints is reports/evidence/patch-defects-{before,after}.txt:
#   scripts/repro/run_all.sh SRC OLD_VENV NEW_VENV VLLM_MLX_DIR [LABEL]
# SRC: a tree whose src/ holds mlxcompat (e41a653 for "before", this branch for "after");
# OLD_VENV: mlx-lm 0.29.1 + mlx 0.29.2; NEW_VENV: mlx-lm 0.32.2 + mlx 0.32.4 + mlx-vlm 0.7.10;
# VLLM_MLX_DIR: `uv pip install --no-deps --target DIR vllm-mlx==0.6.0`.
set -u
src=$1 old=$2 new=$3 vllm=$4 label=${5:-}
here=$(cd "$(dirname "$0")" && pwd)
versions='import importlib.metadata as m
print(", ".join(f"{p} {m.version(p)}" for p in ("mlx", "mlx-lm", "mlx-vlm")
                if __import__("importlib.util").util.find_spec(p.replace("-", "_"))))'
run() {
  local venv=$1 script=$2
  shift 2
  echo "### $script $* (venv $venv: $("$venv/bin/python" -c "$versions"))"
  PYTHONPATH="$src/src" HF_HUB_OFFLINE=1 "$venv/bin/python" "$here/$script" "$@" 2>&1
  echo "### exit $?"
  echo
}
echo "# source: $src/src ${label:-$(git -C "$src" rev-parse --short HEAD)}"
run "$old" concurrent_ensure.py 4
run "$new" concurrent_ensure.py 4
run "$new" glm4v_with_vllm_mlx.py "$vllm"
run "$new" model_across_threads.py
run "$old" rng_reseed.py
run "$new" rng_reseed.py
