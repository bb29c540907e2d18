#!/usr/bin/env bash
# Set up the Python peers of the ANN comparison bench (crates/bench-ann, issue 15).
#
# Creates (once) the virtual environment ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/venv-bench and
# installs into it hnswlib 0.8.0 (the HNSW peer, pinned so that figures stay comparable) and
# numpy, plus faiss-cpu when PyPI has a build for this Python (optional: the bench runs without it).
# Other benches may install their own peers into the same venv; this script only adds packages
# and checks by import, so re-running it is cheap.
#
# The last line of stdout is the venv's python interpreter.
set -euo pipefail

CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
VENV="$CACHE_DIR/venv-bench"
PYTHON="${PYTHON:-python3}"

mkdir -p "$CACHE_DIR"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"
pip_install() {
  # pip's chatter goes to stderr so that stdout stays the interpreter's path.
  "$PY" -m pip install --disable-pip-version-check --quiet "$@" >&2
}

if "$PY" -c 'import hnswlib, numpy, sys; from importlib.metadata import version; sys.exit(0 if version("hnswlib") == "0.8.0" else 1)' 2>/dev/null; then
  echo "hnswlib 0.8.0 and numpy already installed" >&2
else
  echo "installing hnswlib==0.8.0 and numpy (hnswlib builds from source: needs g++)" >&2
  pip_install "numpy" "hnswlib==0.8.0"
fi

if "$PY" -c 'import faiss' 2>/dev/null; then
  echo "faiss-cpu already installed" >&2
elif pip_install "faiss-cpu"; then
  echo "installed faiss-cpu" >&2
else
  echo "faiss-cpu not installable here; the bench reports it as SKIPPED" >&2
fi

echo "$PY"
