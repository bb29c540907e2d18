#!/usr/bin/env bash
# Installs the official OpenAI clients the OpenAI-compatible endpoint is tested with: the Python
# SDK (PyPI `openai`, pinned in tests/openai/requirements.txt) into a virtual environment, and
# the npm library (tests/openai/package-lock.json). Prints the venv's python. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ZHIKU_OPENAI_VENV:-$HOME/.cache/zhiku/venv-openai}"
WANT="$(sed -n 's/^openai==//p' tests/openai/requirements.txt)"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("openai"))' 2>/dev/null)" != "$WANT" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/openai/requirements.txt
fi
if [ ! -d tests/openai/node_modules/openai ]; then
    command -v npm >/dev/null || { echo "setup-openai-clients: npm is missing" >&2; exit 1; }
    npm ci --prefix tests/openai --no-audit --no-fund --silent
fi
echo "$VENV/bin/python"
