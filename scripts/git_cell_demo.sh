#!/usr/bin/env bash
# A cell pinned to a git commit, tried without GitHub: a local repository made from a
# release's sdist, pinned by its commit, run beside the same release's PyPI cell; the rows
# of both are then compared (scripts/compare_cells.py).
#
#   scripts/git_cell_demo.sh [VERSION] [WORK]      (default 0.32.2, /tmp/mlxcompat-git-cell)
#   then: nox -s "matrix(git-mlx-lm-<sha12>)" and "matrix(mlx-lm-VERSION)" with the printed
#   MLXCOMPAT_MATRIX, and python scripts/compare_cells.py A.json B.json
set -euo pipefail
VERSION="${1:-0.32.2}"
WORK="${2:-/tmp/mlxcompat-git-cell}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
mkdir -p "$WORK"
python3 - "$VERSION" "$WORK" <<'EOF'
import sys
from pathlib import Path
sys.path.insert(0, "src")
from mlxcompat.pypi import sdist_for
print(sdist_for("mlx-lm", sys.argv[1], Path(sys.argv[2])))
EOF
REPO="$WORK/mlx-lm"
rm -rf "$REPO" && mkdir -p "$REPO"
tar -xzf "$WORK/mlx_lm-$VERSION.tar.gz" -C "$REPO" --strip-components=1
# As upstream's repository: the sdist's generated files are not tracked, the release is a tag
# (setuptools-scm derives the version from it), so the build says $VERSION, not a dev version.
rm -rf "$REPO/PKG-INFO" "$REPO"/*.egg-info
printf 'mlx_lm/_version.py\n*.egg-info/\n' > "$REPO/.gitignore"
git -C "$REPO" init -q
git -C "$REPO" add -A
GIT_COMMITTER_DATE="2026-01-01T00:00:00Z" git -C "$REPO" -c user.name=mlxcompat \
    -c user.email=mlxcompat@invalid commit -q --date "2026-01-01T00:00:00Z" \
    -m "mlx-lm $VERSION from its sdist"
git -C "$REPO" tag "v$VERSION"
SHA="$(git -C "$REPO" rev-parse HEAD)"
# The project's matrix plus one cell: the same release from that commit, with the same
# subjects and models as its PyPI cell.
sed -n '1,/^runners:/p' "$ROOT/matrix.yaml" | sed '$d' > "$WORK/matrix.yaml"
CELL="$(grep -E "^  - \{mlx-lm: \"$VERSION\"" "$ROOT/matrix.yaml" | head -1)"
GIT="{git: \"file://$REPO\", commit: \"$SHA\"}"
echo "${CELL/\"$VERSION\"/$GIT}" | sed 's/tags: \[quick\], //' >> "$WORK/matrix.yaml"
sed -n '/^runners:/,$p' "$ROOT/matrix.yaml" >> "$WORK/matrix.yaml"
cp "$ROOT/matrix.lock.json" "$WORK/matrix.lock.json"
echo "commit $SHA"
echo "cell   git-mlx-lm-${SHA:0:12}"
echo "export MLXCOMPAT_MATRIX=$WORK/matrix.yaml"
