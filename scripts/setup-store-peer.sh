#!/usr/bin/env bash
# Set up the Python peer of the embedded-store bench (crates/bench-store): LanceDB.
#
# Creates (or reuses) the virtual environment ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/venv-bench
# and installs a pinned LanceDB (with pyarrow) into it. Re-running is cheap: a stamp file records
# the requirement set last installed. Kept apart from any other setup script that may also fill
# venv-bench, so the two never edit the same file; pip adds to the venv, it does not replace it.
#
# The last line of stdout is the venv's python interpreter:
#   PY=$(bash scripts/setup-store-peer.sh | tail -n1)
# The bench looks for that interpreter itself (or takes ZHIKU_BENCH_PYTHON).
set -euo pipefail

CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
VENV="$CACHE_DIR/venv-bench"
STAMP="$VENV/.zhiku-store-peer-stamp"
PYTHON="${PYTHON:-python3}"

REQS=(
  "lancedb==0.40.0"
  "pyarrow"
)
WANT="${REQS[*]}"

mkdir -p "$CACHE_DIR"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "store peer already installed ($WANT)" >&2
else
  echo "installing store peer: $WANT" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "${REQS[@]}" >&2
  echo "$WANT" > "$STAMP"
fi
"$VENV/bin/python" -c 'import lancedb, pyarrow; print("lancedb", lancedb.__version__, "pyarrow", pyarrow.__version__)' >&2
echo "$VENV/bin/python"
