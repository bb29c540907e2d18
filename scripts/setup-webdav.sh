#!/usr/bin/env bash
# Creates the virtual environment of the WebDAV server the WebDAV source is tested against
# (wsgidav on cheroot, from PyPI) and prints its python. Idempotent. Each test starts its own
# server on a free port with its own folder (crates/adapters-web/tests/dav.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${ZHIKU_WEBDAV_VENV:-$HOME/.cache/zhiku/venv-webdav}"
if [ ! -x "$VENV/bin/python" ]; then
    python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c "import wsgidav, cheroot" 2>/dev/null \
    || [ "$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("wsgidav"))')" != "4.4.0" ]; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check -r tests/webdav/requirements.txt
fi
echo "$VENV/bin/python"
