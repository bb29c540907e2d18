#!/usr/bin/env bash
# Make a Traditional Chinese copy of the CMRC 2018 dev set (issue 17): OpenCC from PyPI in a
# cache venv, then scripts/make-traditional-cmrc.py over the BEIR folder.
#
#   bash scripts/make-traditional-cmrc.sh [SRC] [DEST] [CONFIG]
#
# SRC    default ../shared/datasets/cmrc2018-dev (read only)
# DEST   default ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/datasets/cmrc2018-dev-hant (never the repo)
# CONFIG default s2twp (OpenCC: Taiwan standard with Taiwan phrases); s2t, s2tw, s2hk also work.
#
# The last line of stdout is DEST.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
SRC="${1:-$HERE/../../shared/datasets/cmrc2018-dev}"
DEST="${2:-$CACHE_DIR/datasets/cmrc2018-dev-hant}"
CONFIG="${3:-s2twp}"
VENV="$CACHE_DIR/venv-opencc"
PYTHON="${PYTHON:-python3}"
# The OpenCC project's own Python binding (the C++ library in a wheel), pinned so that the
# converted set stays the same from run to run.
REQ="opencc==1.4.2"

mkdir -p "$CACHE_DIR"
if [[ ! -x "$VENV/bin/python" ]]; then
  echo "creating venv at $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
if "$VENV/bin/python" -c 'import sys; from importlib.metadata import version; sys.exit(0 if version("opencc") == "1.4.2" else 1)' 2>/dev/null; then
  echo "$REQ already installed" >&2
else
  echo "installing $REQ" >&2
  "$VENV/bin/python" -m pip install --disable-pip-version-check --quiet "$REQ" >&2
fi

"$VENV/bin/python" "$HERE/make-traditional-cmrc.py" "$SRC" "$DEST" --config "$CONFIG" >&2
echo "$DEST"
