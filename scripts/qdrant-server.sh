#!/usr/bin/env bash
# qdrant-server.sh — a real, local Qdrant server for zhiku's Qdrant adapter and its tests.
#
#   qdrant-server.sh [start]   start one node in the background (storage in a fresh temporary
#                              folder) and wait until it is ready; the last line on stdout is
#                              the gRPC URL the adapter takes (ZHIKU_TEST_QDRANT_URL)
#   qdrant-server.sh stop      stop the node started by this script, remove its storage
#   qdrant-server.sh status    say whether it runs, and where
#   qdrant-server.sh binary    print the binary used, or fail saying why there is none
#
# No package registry ships a Qdrant server, so the binary is not installed by the project:
# it is the prebuilt one of the workplace, `../shared/tools/qdrant/qdrant` beside the checkout
# (version and build in its README), used from there and never copied into the repository;
# ZHIKU_QDRANT_BIN names another. Without one, `start` fails with exit status 3 and says so,
# and the tests that need a server print SKIPPED with the variable to set.
#
# Idempotent: a start finds a node this script started and only prints its URL.
# Layout (override the root with ZHIKU_QDRANT_HOME):
#   ~/.cache/zhiku/qdrant-server.pid / .log   pid file and server log
#   ~/.cache/zhiku/qdrant-server.d/           working folder and storage of the running node
#
# Environment knobs (all optional):
#   ZHIKU_QDRANT_HOST (127.0.0.1)  ZHIKU_QDRANT_HTTP_PORT (6333)  ZHIKU_QDRANT_GRPC_PORT (6334)
#   ZHIKU_QDRANT_START_TIMEOUT (60 seconds to wait for /readyz)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
BASE="${ZHIKU_QDRANT_HOME:-$HOME/.cache/zhiku}"
PIDFILE="$BASE/qdrant-server.pid"
LOGFILE="$BASE/qdrant-server.log"
WORKDIR="$BASE/qdrant-server.d"

HOST="${ZHIKU_QDRANT_HOST:-127.0.0.1}"
HTTP_PORT="${ZHIKU_QDRANT_HTTP_PORT:-6333}"
GRPC_PORT="${ZHIKU_QDRANT_GRPC_PORT:-6334}"
START_TIMEOUT="${ZHIKU_QDRANT_START_TIMEOUT:-60}"
URL="http://$HOST:$GRPC_PORT"
READY="http://$HOST:$HTTP_PORT/readyz"

log() { echo "qdrant-server: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=scripts/server-lib.sh
. "$HERE/server-lib.sh"

binary() {
    local bin="${ZHIKU_QDRANT_BIN:-$HERE/../../shared/tools/qdrant/qdrant}"
    if [ ! -x "$bin" ]; then
        log "no Qdrant server binary at $bin (set ZHIKU_QDRANT_BIN to one; no registry ships it)"
        return 3
    fi
    (cd "$(dirname "$bin")" && echo "$(pwd)/$(basename "$bin")")
}

# models_answer: what server-lib's await_ready polls; here, the node's readiness.
models_answer() {
    python3 - "$READY" <<'EOF' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as r:
    assert r.status == 200
print("ready")
EOF
}

start() {
    local bin pid ids waited
    bin="$(binary)" || exit 3
    if pid="$(server_pid)"; then
        if models_answer >/dev/null; then
            log "already running (pid $pid)"
            echo "$URL"
            return
        fi
        log "pid $pid is alive but not ready; restarting it"
        stop
    fi
    if models_answer >/dev/null; then
        die "something already answers $READY (not started by this script); not started"
    fi
    mkdir -p "$BASE"
    rm -rf "$WORKDIR"
    mkdir -p "$WORKDIR/storage" "$WORKDIR/snapshots"
    log "starting $bin on $HOST (gRPC $GRPC_PORT, HTTP $HTTP_PORT; log: $LOGFILE)"
    # Qdrant reads config/ and writes .qdrant-initialized in its working folder: an empty one.
    cd "$WORKDIR"
    export QDRANT__SERVICE__HOST="$HOST" QDRANT__SERVICE__HTTP_PORT="$HTTP_PORT" \
        QDRANT__SERVICE__GRPC_PORT="$GRPC_PORT" \
        QDRANT__STORAGE__STORAGE_PATH="$WORKDIR/storage" \
        QDRANT__STORAGE__SNAPSHOTS_PATH="$WORKDIR/snapshots" \
        QDRANT__TELEMETRY_DISABLED=true
    launch "$bin"
    await_ready "qdrant"
    log "ready after ${waited}s: pid $pid"
    echo "$URL"
}

server_status() {
    local pid
    if pid="$(server_pid)"; then
        log "running: pid $pid, $URL"
    else
        log "not running"
    fi
}

case "${1:-start}" in
    start)  start ;;
    stop)   stop; rm -rf "$WORKDIR" ;;
    status) server_status ;;
    binary) binary ;;
    *) echo "usage: $0 [start|stop|status|binary]" >&2; exit 2 ;;
esac
