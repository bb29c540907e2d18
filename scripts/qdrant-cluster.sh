#!/usr/bin/env bash
# qdrant-cluster.sh — a local three-node Qdrant cluster (distributed mode) for zhiku's cluster
# tests and benches.
#
#   qdrant-cluster.sh [start]   start three nodes (each its own ports and temporary storage),
#                               the first as the bootstrap peer, and wait until every node is
#                               ready and sees three peers; the last line on stdout is the
#                               nodes' gRPC URLs, comma-separated
#   qdrant-cluster.sh stop      stop every node started by this script, remove their storage
#   qdrant-cluster.sh kill N    SIGKILL node N (1..3), keeping its storage (a crash)
#   qdrant-cluster.sh revive N  start node N again on its storage, rejoining the cluster
#   qdrant-cluster.sh status    say which nodes run, and where
#
# The binary is the one scripts/qdrant-server.sh finds (the workplace's prebuilt Qdrant in
# ../shared/tools/qdrant, or ZHIKU_QDRANT_BIN); without one, `start` exits with status 3.
# Ports: node N serves HTTP on 6350+10N, gRPC on 6351+10N and peer-to-peer on 6352+10N (override
# the base 6350 with ZHIKU_QDRANT_CLUSTER_PORT). Layout: ~/.cache/zhiku/qdrant-cluster/nodeN/
# (working folder, storage, pid file, log); override the root with ZHIKU_QDRANT_HOME.
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
BASE="${ZHIKU_QDRANT_HOME:-$HOME/.cache/zhiku}/qdrant-cluster"
PORT0="${ZHIKU_QDRANT_CLUSTER_PORT:-6350}"
HOST=127.0.0.1
NODES=3
START_TIMEOUT="${ZHIKU_QDRANT_START_TIMEOUT:-90}"

log() { echo "qdrant-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# shellcheck source=scripts/server-lib.sh
. "$HERE/server-lib.sh"

http_port() { echo $((PORT0 + 10 * $1)); }
grpc_port() { echo $((PORT0 + 10 * $1 + 1)); }
p2p_port() { echo $((PORT0 + 10 * $1 + 2)); }
dir_of() { echo "$BASE/node$1"; }

node_pid() { pid_in "$(dir_of "$1")/pid"; }

# get N PATH: the body of GET PATH on node N's HTTP port, or failure.
get() {
    python3 - "http://$HOST:$(http_port "$1")$2" <<'EOF' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as r:
    assert r.status == 200
    sys.stdout.write(r.read().decode())
EOF
}

peers_seen() {
    get "$1" /cluster | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["result"]["peers"]))' 2>/dev/null
}

# launch_node N: start node N in its own session on its storage (bootstrap through node 1 for
# every other node), its pid written to its folder.
launch_node() {
    local n="$1" bin dir args
    bin="$(bash "$HERE/qdrant-server.sh" binary)" || exit 3
    dir="$(dir_of "$n")"
    mkdir -p "$dir/storage" "$dir/snapshots"
    args=(--uri "http://$HOST:$(p2p_port "$n")")
    if [ "$n" -ne 1 ]; then
        args+=(--bootstrap "http://$HOST:$(p2p_port 1)")
    fi
    (
        cd "$dir"
        export QDRANT__SERVICE__HOST="$HOST" QDRANT__SERVICE__HTTP_PORT="$(http_port "$n")" \
            QDRANT__SERVICE__GRPC_PORT="$(grpc_port "$n")" \
            QDRANT__CLUSTER__ENABLED=true QDRANT__CLUSTER__P2P__PORT="$(p2p_port "$n")" \
            QDRANT__STORAGE__STORAGE_PATH="$dir/storage" \
            QDRANT__STORAGE__SNAPSHOTS_PATH="$dir/snapshots" \
            QDRANT__TELEMETRY_DISABLED=true
        PIDFILE="$dir/pid" LOGFILE="$dir/log" launch "$bin" "${args[@]}"
    )
}

# await_node N: wait until node N is ready and sees every peer.
await_node() {
    local n="$1" waited=0
    until get "$n" /readyz >/dev/null && [ "$(peers_seen "$n")" = "$NODES" ]; do
        if ! node_pid "$n" >/dev/null; then
            tail -n 30 "$(dir_of "$n")/log" >&2 || true
            die "node $n exited during start-up (see $(dir_of "$n")/log)"
        fi
        [ "$waited" -lt "$START_TIMEOUT" ] || die "node $n not ready after ${START_TIMEOUT}s"
        sleep 1; waited=$((waited + 1))
    done
}

urls() {
    local n out=()
    for n in $(seq 1 "$NODES"); do out+=("http://$HOST:$(grpc_port "$n")"); done
    (IFS=,; echo "${out[*]}")
}

start() {
    local n
    if node_pid 1 >/dev/null; then
        log "already running"
        urls
        return
    fi
    bash "$HERE/qdrant-server.sh" binary >/dev/null || exit 3
    rm -rf "$BASE"
    launch_node 1
    # The first node must be listening on its peer port before the others bootstrap.
    local waited=0
    until get 1 /readyz >/dev/null; do
        [ "$waited" -lt "$START_TIMEOUT" ] || die "node 1 not ready after ${START_TIMEOUT}s"
        sleep 1; waited=$((waited + 1))
    done
    for n in $(seq 2 "$NODES"); do launch_node "$n"; done
    for n in $(seq 1 "$NODES"); do await_node "$n"; done
    log "ready: $NODES nodes, each sees $NODES peers"
    urls
}

# stop_node N: server-lib's stop (SIGTERM, SIGKILL after 10 s) on node N's pid file.
stop_node() { PIDFILE="$(dir_of "$1")/pid" stop 2>/dev/null; }

stop_all() {
    local n
    for n in $(seq 1 "$NODES"); do stop_node "$n"; done
    rm -rf "$BASE"
    log "stopped"
}

status() {
    local n pid
    for n in $(seq 1 "$NODES"); do
        if pid="$(node_pid "$n")"; then
            log "node $n: pid $pid, gRPC http://$HOST:$(grpc_port "$n"), peers seen: $(peers_seen "$n" || echo '?')"
        else
            log "node $n: not running"
        fi
    done
}

case "${1:-start}" in
    start) start ;;
    stop) stop_all ;;
    kill)
        pid="$(node_pid "${2:?node number}")" || die "node $2 is not running"
        kill -9 "$pid"
        rm -f "$(dir_of "$2")/pid"
        log "node $2 (pid $pid) killed"
        ;;
    revive)
        launch_node "${2:?node number}"
        await_node "$2"
        log "node $2 back"
        ;;
    status) status ;;
    *) echo "usage: $0 [start|stop|kill N|revive N|status]" >&2; exit 2 ;;
esac
