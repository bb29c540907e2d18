# shellcheck shell=bash
# server-lib.sh — what embed-server.sh, llm-server.sh and rerank-server.sh share:
# starting a background server from a pid file, waiting for it, stopping it.
# Sourced, not run. The caller defines log, die and models_answer (the served
# model ids, or failure), may define its own server_pid after sourcing (the
# live pid of its server, or failure; by default the one $PIDFILE names), and
# sets PIDFILE, LOGFILE, URL and START_TIMEOUT.

# pid_in FILE: the pid FILE names while that process lives, or failure.
pid_in() {
    local pid
    [ -f "$1" ] || return 1
    pid="$(cat "$1")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

# server_pid: the live pid of this script's server, from $PIDFILE.
server_pid() { pid_in "$PIDFILE"; }

# launch CMD...: start CMD in its own session (setsid: it outlives this shell
# and its job control), output to $LOGFILE, and wait until it has written its
# pid to $PIDFILE (the process writes it just before it execs the server:
# setsid may fork, so $! is not always the server's pid). The install lock
# (fd 9, if held) is not passed on. Sets `pid` and `waited` (seconds so far).
launch() {
    rm -f "$PIDFILE"
    # shellcheck disable=SC2016
    setsid nohup sh -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "$@" \
        >"$LOGFILE" 2>&1 </dev/null 9>&- &
    waited=0
    until [ -s "$PIDFILE" ]; do
        [ "$waited" -lt 10 ] || die "the server did not start (see $LOGFILE)"
        sleep 1; waited=$((waited + 1))
    done
    pid="$(cat "$PIDFILE")"
}

# await_ready WHAT: wait until models_answer succeeds (sets `ids`); fail with
# the log's tail when the process exits, and stop it after $START_TIMEOUT s.
await_ready() {
    # shellcheck disable=SC2034  # ids is the caller's
    until ids="$(models_answer)"; do
        if ! kill -0 "$pid" 2>/dev/null; then
            rm -f "$PIDFILE"
            tail -n 30 "$LOGFILE" >&2 || true
            die "$1 exited during start-up (see $LOGFILE)"
        fi
        if [ "$waited" -ge "$START_TIMEOUT" ]; then
            stop
            die "no answer from $URL after ${START_TIMEOUT}s (see $LOGFILE)"
        fi
        sleep 1; waited=$((waited + 1))
    done
}

# stop: SIGTERM the server, SIGKILL after 10 s, forget the pid file.
stop() {
    local pid
    if ! pid="$(server_pid)"; then
        rm -f "$PIDFILE"
        log "not running"
        return 0
    fi
    kill "$pid" 2>/dev/null || true
    local _
    for _ in $(seq 1 20); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.5
    done
    if kill -0 "$pid" 2>/dev/null; then
        log "pid $pid ignored SIGTERM; sending SIGKILL"
        kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$PIDFILE"
    log "stopped (pid $pid)"
}

# server_status [EXTRA]: say whether the server runs (printing its URL) and
# answers; EXTRA is appended to the "running" line.
server_status() {
    local pid ids
    if pid="$(server_pid)" && ids="$(models_answer)"; then
        log "running: pid $pid, model \"$ids\"${1:-}"
        echo "$URL"
    elif pid="$(server_pid)"; then
        log "pid $pid is alive but $URL does not answer (busy with a long request, or still loading? see $LOGFILE)"
        return 1
    else
        log "not running"
        return 1
    fi
}
