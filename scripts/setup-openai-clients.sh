#!/usr/bin/env bash
# Installs the clients the OpenAI-compatible endpoint is tested with. Idempotent.
#
#   setup-openai-clients.sh              the official SDKs: the Python `openai` (pinned in
#                                        tests/openai/requirements.txt) into a venv, and the npm
#                                        `openai` (tests/openai/package-lock.json); prints the
#                                        venv's python
#   setup-openai-clients.sh frameworks   LangChain's and LlamaIndex's OpenAI clients (pinned in
#                                        tests/openai/requirements-frameworks.txt) into a venv of
#                                        their own (they want another openai major version);
#                                        prints its python
set -euo pipefail
cd "$(dirname "$0")/.."

# venv DIR REQUIREMENTS: DIR holds exactly what REQUIREMENTS pins (installed when a pin differs).
venv() {
    local dir="$1" req="$2" name version
    [ -x "$dir/bin/python" ] || python3 -m venv "$dir"
    while read -r name version; do
        if [ "$("$dir/bin/python" -c "import importlib.metadata as m; print(m.version('$name'))" 2>/dev/null)" != "$version" ]; then
            "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$req"
            break
        fi
    done < <(sed -n 's/^\([A-Za-z0-9_.-]*\)==\(.*\)$/\1 \2/p' "$req")
    echo "$dir/bin/python"
}

case "${1:-sdks}" in
    sdks)
        if [ ! -d tests/openai/node_modules/openai ]; then
            command -v npm >/dev/null || { echo "setup-openai-clients: npm is missing" >&2; exit 1; }
            npm ci --prefix tests/openai --no-audit --no-fund --silent
        fi
        venv "${ZHIKU_OPENAI_VENV:-$HOME/.cache/zhiku/venv-openai}" tests/openai/requirements.txt ;;
    frameworks)
        venv "${ZHIKU_FRAMEWORKS_VENV:-$HOME/.cache/zhiku/venv-frameworks}" \
            tests/openai/requirements-frameworks.txt ;;
    *) echo "usage: $0 [sdks|frameworks]" >&2; exit 2 ;;
esac
