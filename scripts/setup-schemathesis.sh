#!/usr/bin/env bash
# Creates the virtual environment of the OpenAPI conformance test (schemathesis from PyPI) and
# prints the path of its `st` command. Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ZHIKU_SCHEMATHESIS_VENV:-$HOME/.cache/zhiku/venv-st}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if [ "$("$VENV/bin/st" --version 2>/dev/null || true)" != "st, version 4.32.5" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/openapi/requirements.txt
fi
echo "$VENV/bin/st"
