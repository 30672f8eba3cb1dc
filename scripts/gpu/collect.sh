#!/usr/bin/env bash
# Here, after a device call: `scripts/gpu/collect.sh <files_at>` copies what run_cell.sh left
# in $OUT back under its own name: <cell>_AT_cuda.json (and .bench.json) into reports/raw as
# <cell>@cuda.json, a tagged second run (<cell>_AT_cuda-<tag>.json) into reports/evidence/gpu/.
set -euo pipefail
src=${1:?usage: collect.sh <files_at>}
cd "$(dirname "$0")/../.."
mkdir -p reports/raw reports/evidence/gpu
find "$src" -name '*_AT_cuda*' -type f | while read -r f; do
  name=$(basename "$f")
  name=${name/_AT_/@}
  case "$name" in
    *@cuda.json|*@cuda.bench.json) dest=reports/raw/$name ;;
    *) dest=reports/evidence/gpu/$name ;;
  esac
  cp "$f" "$dest" && chmod u+w "$dest" && echo "$dest"
done
