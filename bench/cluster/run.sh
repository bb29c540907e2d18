#!/usr/bin/env bash
# Failover bench for profile `cluster`: two `zhiku serve` replicas on one knowledge base kept
# whole on a private three-node Qdrant cluster (6 shards × 2 replicas), under a modest mixed
# load (bench/cluster/failover.py: 4 threads, 70 % search, 20 % ask, 10 % writes, plus one
# reader thread sending a search every 0.1 s) while a
# Qdrant node is SIGKILLed (at 1/3 of the run), replica 1 is SIGKILLed (1/2, while it holds the
# write lease) and the node is revived (2/3). Then it checks every acknowledged write on replica 2, runs `zhiku verify`
# from a third store folder, and stops everything it started. The client's give-ups (10 s
# timeouts) are matched, by request ID, against the replicas' logs (status 499 lines).
#
# This is a bench, not a test: it measures and reports (figures go into RESULTS.md by hand);
# it exits non-zero only when it cannot run.
#
# Usage: bash bench/cluster/run.sh
# Variables:
#   ZHIKU_BIN   the zhiku binary (default $HOME/.cache/zhiku/target/debug/zhiku; build it with
#               `CARGO_TARGET_DIR=$HOME/.cache/zhiku/target cargo build -p zhiku`)
#   DURATION    seconds of load (default 60)
#   THREADS     client threads (default 4)
#   WORK        working folder (default /tmp/zhiku-failover): the Qdrant nodes (WORK/qdrant-cluster,
#               removed at the end), the KB copy (WORK/kb), replica stores (WORK/r1, r2, r3), logs
#               (the nodes' too, WORK/qdrant-nodeN.log) and the JSON report (WORK/failover.json),
#               kept until the next run
#   PORT0       the cluster's port base (default 6400: node N serves HTTP on 6400+10N, gRPC on
#               6401+10N), kept apart from the other clusters of this machine
#   R1_PORT, R2_PORT  the replicas' ports (default 7901, 7902)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BIN="${ZHIKU_BIN:-$HOME/.cache/zhiku/target/debug/zhiku}"
DURATION="${DURATION:-60}"
THREADS="${THREADS:-4}"
WORK="${WORK:-/tmp/zhiku-failover}"
PORT0="${PORT0:-6400}"
R1_PORT="${R1_PORT:-7901}"
R2_PORT="${R2_PORT:-7902}"

say() { echo "bench/cluster: $*" >&2; }
die() { say "$*"; exit 1; }

[ -x "$BIN" ] || die "no zhiku binary at $BIN; build it with:
  CARGO_TARGET_DIR=\$HOME/.cache/zhiku/target cargo build -p zhiku"

CLUSTER=(env ZHIKU_QDRANT_HOME="$WORK" ZHIKU_QDRANT_CLUSTER_PORT="$PORT0" bash "$ROOT/scripts/qdrant-cluster.sh")
R1_PID="" R2_PID=""
KB="$WORK/kb"

cleanup() {
    local rc=$?
    for pid in $R1_PID $R2_PID; do
        if kill -0 "$pid" 2>/dev/null; then
            kill "$pid" 2>/dev/null || true
            for _ in $(seq 1 20); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -0 "$pid" 2>/dev/null && kill -9 "$pid" 2>/dev/null || true
        fi
    done
    # the nodes' logs are removed with their storage: keep a copy
    for n in 1 2 3; do cp "$WORK/qdrant-cluster/node$n/log" "$WORK/qdrant-node$n.log" 2>/dev/null || true; done
    "${CLUSTER[@]}" stop || true
    exit "$rc"
}
trap cleanup EXIT

mkdir -p "$WORK"
rm -rf "$WORK/r1" "$WORK/r2" "$WORK/r3" "$WORK/kb" "$WORK"/*.log "$WORK/failover.json"

say "load before: $(uptime)"

# 1. The private cluster.
URLS="$("${CLUSTER[@]}" start | tail -n 1)"
say "cluster: $URLS"

# 2. A copy of the example KB, with one write token.
mkdir -p "$KB"
(cd "$ROOT/examples/kb" && tar --exclude=./.zhiku -cf - .) | (cd "$KB" && tar -xf -)
TOKEN_OUT="$("$BIN" token bench --scope default --scope public --write --kb "$KB")"
TOKEN="$(printf '%s\n' "$TOKEN_OUT" | sed -n '2p' | tr -d '[:space:]')"
[[ "$TOKEN" =~ ^[0-9a-f]{32,}$ ]] || die "no token in: $TOKEN_OUT"
{
    [ -f "$KB/zhiku.toml" ] && cat "$KB/zhiku.toml"
    printf '%s\n' "$TOKEN_OUT" | sed -n '/^\[\[serve.tokens\]\]/,$p'
} >"$KB/zhiku.toml.new"
mv "$KB/zhiku.toml.new" "$KB/zhiku.toml"

# 3. The environment of every zhiku command.
export ZHIKU_PROFILE=cluster ZHIKU_QDRANT_URL="$URLS" ZHIKU_QDRANT_KNOWLEDGE_BASE="failover$$" \
    ZHIKU_QDRANT_SHARDS=6 ZHIKU_QDRANT_REPLICATION=2 ZHIKU_EMBEDDER=hashing \
    ZHIKU_QDRANT_TIMEOUT_MS=3000

# 4. Index, then two replicas.
"$BIN" index --kb "$KB" >"$WORK/index.log" 2>&1 || { cat "$WORK/index.log" >&2; die "index failed"; }
say "indexed: $(tail -n 1 "$WORK/index.log")"
"$BIN" --kb "$KB" --store "$WORK/r1" serve --bind "127.0.0.1:$R1_PORT" >"$WORK/r1.log" 2>&1 &
R1_PID=$!
"$BIN" --kb "$KB" --store "$WORK/r2" serve --bind "127.0.0.1:$R2_PORT" >"$WORK/r2.log" 2>&1 &
R2_PID=$!
for port in "$R1_PORT" "$R2_PORT"; do
    waited=0
    until curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null; do
        kill -0 "$R1_PID" 2>/dev/null && kill -0 "$R2_PID" 2>/dev/null \
            || { tail -n 20 "$WORK"/r?.log >&2; die "a replica exited during start-up"; }
        [ "$waited" -lt 240 ] || die "replica on $port not healthy after 120 s"
        sleep 0.5; waited=$((waited + 1))
    done
done
say "replicas up: r1 pid $R1_PID :$R1_PORT, r2 pid $R2_PID :$R2_PORT"

# 5. The load, the kills and the revive.
CMD="$(printf '%q ' "${CLUSTER[@]}")"
set +e
python3 "$HERE/failover.py" --token "$TOKEN" \
    --replica "http://127.0.0.1:$R1_PORT" --replica "http://127.0.0.1:$R2_PORT" \
    --replica1-pid "$R1_PID" --cluster-cmd "$CMD" --duration "$DURATION" --threads "$THREADS" \
    --qdrant-http "http://127.0.0.1:$((PORT0 + 10))" --kb-name "$ZHIKU_QDRANT_KNOWLEDGE_BASE" \
    --replica-log "$WORK/r1.log" --replica-log "$WORK/r2.log" --out "$WORK/failover.json"
LOAD_RC=$?
set -e
say "failover.py exited $LOAD_RC"

# 6. Revive whatever is still down, let the cluster settle, verify from a third store folder.
# (status is read whole before grep: `grep -q` closing the pipe early would fail it under
# pipefail, and reviving a running node starts a second process on its ports.)
STATUS="$("${CLUSTER[@]}" status 2>&1 || true)"
for n in 1 2 3; do
    if ! grep -q "node $n: pid" <<<"$STATUS"; then
        say "reviving node $n"; "${CLUSTER[@]}" revive "$n" || true
    fi
done
sleep 10
set +e
"$BIN" --kb "$KB" --store "$WORK/r3" verify >"$WORK/verify.log" 2>&1
VERIFY_RC=$?
set -e
say "verify exited $VERIFY_RC: $(tail -n 1 "$WORK/verify.log")"

# 7. Stop the surviving replica (by PID) and the cluster (trap).
if kill -0 "$R2_PID" 2>/dev/null; then
    kill "$R2_PID"; wait "$R2_PID" 2>/dev/null || true
    say "replica 2 stopped"
else
    say "replica 2 was not running any more (see $WORK/r2.log)"
fi
wait "$R1_PID" 2>/dev/null || true
say "load after: $(uptime)"
say "logs and failover.json in $WORK"
