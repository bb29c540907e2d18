#!/usr/bin/env bash
# Set up the Python "peer" environment used by bench/peers/*.py.
#
# Creates a virtual environment at ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/venv-peers
# and installs a pinned set of packages from PyPI into it. Re-running is cheap:
# a stamp file records the requirement set that was last installed, and the
# install step is skipped when it matches.
#
# The last line of stdout is the path of the venv's python interpreter, so
# callers can do:  PY=$(bash scripts/python-peers.sh | tail -n1)
# Every BM25 peer (jieba + rank_bm25, jieba + bm25s, the dictionary-free CJK-bigram bm25s) on a
# BEIR folder: "$PY" bench/peers/bm25_peer.py --beir DIR --stack all --json
set -euo pipefail

CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
VENV="$CACHE_DIR/venv-peers"
STAMP="$VENV/.zhiku-peers-stamp"
PYTHON="${PYTHON:-python3}"

# Pinned requirement set. Changing this list invalidates the stamp.
REQS=(
  "jieba==0.42.1"
  "rank-bm25==0.2.2"
  "bm25s==0.3.16"
  "numpy"
)
WANT="${REQS[*]}"

mkdir -p "$CACHE_DIR"

# Create the venv once (or recreate it if its interpreter went missing).
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$WANT" ]]; then
  echo "peer packages already installed ($WANT)" >&2
else
  echo "installing peer packages: $WANT" >&2
  # pip's chatter goes to stderr so that stdout stays clean.
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "${REQS[@]}" >&2
  printf '%s' "$WANT" > "$STAMP"
fi

echo "$VENV/bin/python"
