#!/usr/bin/env bash
# Creates the virtual environment of the MCP client test (the official `mcp` package from PyPI)
# and prints its python. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ZHIKU_MCP_VENV:-$HOME/.cache/zhiku/venv-mcp}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import mcp" 2>/dev/null \
    || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mcp"))')" != "2.3.0" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/mcp/requirements.txt
fi
echo "$VENV/bin/python"
