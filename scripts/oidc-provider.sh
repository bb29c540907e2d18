#!/usr/bin/env bash
# oidc-provider.sh — a real OpenID Connect provider on 127.0.0.1 for zhiku's identity tests:
# oidc-provider 9.13 (npm, MIT) with the test's sign-in and consent (tests/oidc/provider.mjs).
#
#   oidc-provider.sh [start]   install what is missing, make a signing key if there is none,
#                              start the provider and wait for its discovery document; the last
#                              line on stdout is the issuer URL
#   oidc-provider.sh rotate    sign with a new key from now on, keeping the old one published
#                              (a provider's key rollover); the last line is the new key ID
#   oidc-provider.sh retire    publish only the newest key (the old ones withdrawn)
#   oidc-provider.sh stop      stop the provider started by this script
#   oidc-provider.sh status    say whether it runs
#   oidc-provider.sh install   only install (npm ci in tests/oidc) and make the first key
#
# Layout (root: ZHIKU_OIDC_HOME, default ~/.cache/zhiku/oidc-provider):
#   jwks.json        the provider's private signing keys, newest (signing) first
#   keys/KID.pem     each key's private half, so tests can sign tokens the provider did not
#                    issue (expired, wrong audience, …) with a key it publishes
#   users.json       each person's groups ({"li.lei@corp": {"groups": ["hr"]}}), read at sign-in
#   provider.pid / provider.log
# Environment: ZHIKU_OIDC_PORT (8095), ZHIKU_OIDC_AUDIENCE (urn:zhiku), ZHIKU_OIDC_TOKEN_TTL (600 s).
# Nothing is downloaded but the npm package (from the lock file in tests/oidc).
set -euo pipefail
cd "$(dirname "$0")/.."

HOME_DIR="${ZHIKU_OIDC_HOME:-$HOME/.cache/zhiku/oidc-provider}"
PORT="${ZHIKU_OIDC_PORT:-8095}"
PIDFILE="$HOME_DIR/provider.pid"
LOGFILE="$HOME_DIR/provider.log"
URL="http://127.0.0.1:$PORT"
START_TIMEOUT="${ZHIKU_OIDC_START_TIMEOUT:-30}"
export ZHIKU_OIDC_HOME="$HOME_DIR" ZHIKU_OIDC_PORT="$PORT"

log() { printf '[oidc-provider] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=scripts/server-lib.sh
. scripts/server-lib.sh

# The issuer's discovery document answers (server-lib's readiness check).
models_answer() {
    curl -fsS --max-time 2 "$URL/.well-known/openid-configuration" 2>/dev/null \
        | grep -q "\"issuer\":\"$URL\"" && echo "$URL"
}

install() {
    command -v node >/dev/null || die "node is missing (install Debian's nodejs)"
    if [ ! -d tests/oidc/node_modules/oidc-provider ]; then
        log "installing oidc-provider from tests/oidc/package-lock.json"
        npm ci --prefix tests/oidc --no-audit --no-fund --silent
    fi
    mkdir -p "$HOME_DIR"
    [ -s "$HOME_DIR/jwks.json" ] || node tests/oidc/provider.mjs keygen "$HOME_DIR" >/dev/null
}

start() {
    install
    if server_pid >/dev/null && models_answer >/dev/null; then echo "$URL"; return; fi
    launch node tests/oidc/provider.mjs serve
    await_ready "the provider"
    log "running: pid $pid, issuer $URL"
    echo "$URL"
}

case "${1:-start}" in
    start)  start ;;
    stop)   stop ;;
    status) server_status ;;
    install) install; echo "$HOME_DIR" ;;
    rotate|retire)
        install
        kid="$(node tests/oidc/provider.mjs keygen "$HOME_DIR" $([ "$1" = retire ] && echo --drop-old))"
        if server_pid >/dev/null; then stop; start >/dev/null; fi
        echo "$kid" ;;
    *) echo "usage: $0 [start|stop|status|install|rotate|retire]" >&2; exit 2 ;;
esac
