#!/usr/bin/env bash
# rerank-server.sh — a real, local reranking server for zhiku's HTTP reranker tests
# (tests/tests/contract_rerank_http.rs, crates/app/tests/rerank_parity.rs).
#
#   rerank-server.sh [start]   install what is missing, start llama.cpp's
#                              `llama-server --reranking` in the background and
#                              wait until /v1/models answers; the last line on
#                              stdout is the server's root URL (ZHIKU_TEST_RERANK_URL)
#   rerank-server.sh stop      stop the server started by this script
#   rerank-server.sh restart   stop, then start
#   rerank-server.sh status    say whether it runs, and where
#   rerank-server.sh install   only build llama-server and make the stand-in model
#   rerank-server.sh model     only make the stand-in model; prints its folder
#   rerank-server.sh standin   the same: the last line on stdout is the stand-in's
#                              folder (ZHIKU_TEST_RERANK_STANDIN; its hf/ is read)
#
# What it serves: no trained reranker ships in a package this project can
# reach, so the server runs a *stand-in* cross-encoder made by
# scripts/make-rerank-standin.py from the all-MiniLM-L6-v2 test model
# (scripts/fetch-test-model.sh): MiniLM's encoder and pooler plus a seeded
# output row. Its scores carry no relevance, but they are a deterministic
# function of (query, passage) computed by a real transformer in a real
# server, and the folder's hf/ copy lets candle check that it agrees.
#   * POST /v1/rerank {"query", "documents", "top_n"?} (llama.cpp's
#     Jina/Cohere-style reply: results[] of {index, relevance_score});
#   * model id "zhiku-rerank-standin" (--alias), 512 tokens per (query,
#     passage) pair; a longer pair is refused (HTTP 500), not truncated.
#
# Everything comes from PyPI (no GitHub, no model hub):
#   * llama.cpp's source: the sdist of llama-cpp-python (it vendors llama.cpp
#     under vendor/llama.cpp), fetched with `pip download` and checked against
#     a pinned SHA-256; only the `llama-server` target is built, with cmake and
#     ninja from PyPI and the system C/C++ compiler, CPU only, statically
#     linked (so the binary can be moved out of its build tree), portable
#     x86-64-v3 (AVX2/FMA/F16C/BMI2, no AVX-512, no AMX: see llm-server.sh);
#     about 15 min with 2 jobs, 25 min with 1, on 2 cores;
#   * the gguf Python package that writes the stand-in's GGUF: the same
#     sdist's vendor/llama.cpp/gguf-py, with numpy/pyyaml/tqdm in the venv.
#
# Idempotent: each step is skipped when its result is already in place, and
# each result is assembled in a temporary folder and moved into place only
# once complete, so an interrupted run is never mistaken for a finished one
# (an interrupted build resumes: its build tree is kept until it succeeds).
# Install steps hold a lock (flock), so two concurrent starts do not build twice.
# Layout (override the root with ZHIKU_RERANK_HOME):
#   ~/.cache/zhiku/venv-rerank/                  venv: cmake, ninja, numpy, pyyaml, tqdm,
#                                                scikit-build-core (pip reads the sdist with it)
#   ~/.cache/zhiku/llama_cpp_python-0.3.36/      the unpacked sdist (llama.cpp source, gguf-py)
#   ~/.cache/zhiku/llama-server-0.3.36/bin/llama-server   the built server
#   ~/.cache/zhiku/.llama-server-0.3.36.build/   the build tree while a build is unfinished
#   ~/.cache/zhiku/models/rerank-standin/        standin.gguf and hf/ (the stand-in)
#   ~/.cache/zhiku/rerank-server.pid / .log      pid file and server log
# The MiniLM folder is scripts/fetch-test-model.sh's (it honours ZHIKU_CACHE_DIR:
# ${ZHIKU_CACHE_DIR:-~/.cache/zhiku}/models/all-MiniLM-L6-v2); it is fetched when missing.
#
# Environment knobs (all optional):
#   ZHIKU_RERANK_HOST (127.0.0.1)  ZHIKU_RERANK_PORT (8090)
#   ZHIKU_RERANK_THREADS (1: on a shared 2-core machine ggml's spinning thread
#     barrier makes 2 threads much slower; on an idle machine 2 may be faster)
#   ZHIKU_RERANK_BUILD_JOBS (2)  ZHIKU_RERANK_START_TIMEOUT (120 seconds to wait for /v1/models)
#   ZHIKU_RERANK_CMAKE_ARGS (replaces the CPU/feature flags below; Release and
#     static linking are always set)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

BASE="${ZHIKU_RERANK_HOME:-$HOME/.cache/zhiku}"
VENV="$BASE/venv-rerank"
PY="$VENV/bin/python"
PIDFILE="$BASE/rerank-server.pid"
LOGFILE="$BASE/rerank-server.log"
LOCKFILE="$BASE/rerank-server.lock"

HOST="${ZHIKU_RERANK_HOST:-127.0.0.1}"
PORT="${ZHIKU_RERANK_PORT:-8090}"
THREADS="${ZHIKU_RERANK_THREADS:-1}"
BUILD_JOBS="${ZHIKU_RERANK_BUILD_JOBS:-2}"
START_TIMEOUT="${ZHIKU_RERANK_START_TIMEOUT:-120}"

LLAMA_CPP_PYTHON_VERSION="0.3.36"
# sha256 of llama_cpp_python-0.3.36.tar.gz as published on PyPI.
SDIST_SHA256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
SDIST_NAME="llama_cpp_python-$LLAMA_CPP_PYTHON_VERSION"
SRC_DIR="$BASE/$SDIST_NAME"
LLAMA_SRC="$SRC_DIR/vendor/llama.cpp"

SERVER_DIR="$BASE/llama-server-$LLAMA_CPP_PYTHON_VERSION"
SERVER_BIN="$SERVER_DIR/bin/llama-server"
BUILD_TREE="$BASE/.llama-server-$LLAMA_CPP_PYTHON_VERSION.build"

MINILM_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/models/all-MiniLM-L6-v2"
MODELS_DIR="$BASE/models"
STANDIN_DIR="$MODELS_DIR/rerank-standin"
STANDIN_GGUF="$STANDIN_DIR/standin.gguf"
STANDIN_SCRIPT="$SCRIPT_DIR/make-rerank-standin.py"

MODEL_ALIAS="zhiku-rerank-standin"
# The server's context is split over its slots; one pair must fit one slot's
# share, which llama.cpp caps at the model's 512 trained positions anyway.
N_CTX=2048
UBATCH=512

# The venv's packages, pinned (pip installs their own dependencies).
VENV_PINS=(cmake==4.4.5 ninja==1.13.2 numpy==2.4.6 PyYAML==6.0.4 tqdm==4.70.1 scikit-build-core==1.1.2)

# Always set: a Release build, linked statically so that bin/llama-server
# runs after it is moved out of the build tree (a shared build's RPATH points
# into that tree).
FIXED_CMAKE_ARGS="-DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF"
# CPU only, portable x86-64-v3; only the server is configured with the tools
# (no tests, examples, web UI, OpenSSL or UI download). LLAMA_CURL is left
# out: this llama.cpp only warns that it is deprecated.
DEFAULT_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_BLAS=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF"
BUILD_CMAKE_ARGS="$FIXED_CMAKE_ARGS ${ZHIKU_RERANK_CMAKE_ARGS:-$DEFAULT_CMAKE_ARGS}"
BUILD_STAMP_TEXT="llama-cpp-python $LLAMA_CPP_PYTHON_VERSION: $BUILD_CMAKE_ARGS"

URL="http://$HOST:$PORT"

log() { printf '[rerank-server] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=scripts/server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/server-lib.sh"

# Install steps run under one lock per root; the server must not inherit it
# (see start), or the lock would be held for as long as the server lives.
take_lock() {
    [ -n "${RERANK_LOCKED:-}" ] && return
    mkdir -p "$BASE"
    if command -v flock >/dev/null; then
        exec 9>>"$LOCKFILE"
        if ! flock -n 9; then
            log "another rerank-server.sh is installing in $BASE; waiting for it"
            flock 9
        fi
    fi
    RERANK_LOCKED=1
}

# ---------------------------------------------------------------- prerequisites
ensure_toolchain() {
    local missing=()
    command -v python3 >/dev/null || missing+=(python3)
    { command -v cc >/dev/null || command -v gcc >/dev/null; } || missing+=(gcc)
    { command -v c++ >/dev/null || command -v g++ >/dev/null; } || missing+=(g++)
    command -v tar >/dev/null || missing+=(tar)
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "installing from Debian: build-essential python3-venv tar (missing: ${missing[*]})"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3-venv tar >/dev/null
        else
            die "missing ${missing[*]}: install build-essential and python3-venv"
        fi
    fi
}

venv_ok() {
    [ -x "$PY" ] || return 1
    "$PY" - "${VENV_PINS[@]}" <<'PYEOF' 2>/dev/null
import sys, importlib.metadata as md
for pin in sys.argv[1:]:
    name, version = pin.split("==")
    assert md.version(name) == version, pin
PYEOF
}

ensure_venv() {
    if venv_ok; then return; fi
    ensure_toolchain
    if ! { [ -x "$PY" ] && "$PY" -c 'import sys' 2>/dev/null; }; then
        log "creating virtualenv $VENV"
        mkdir -p "$BASE"
        python3 -m venv "$VENV" || die "python3 -m venv $VENV failed"
    fi
    log "installing into $VENV: ${VENV_PINS[*]}"
    "$PY" -m pip install -q --disable-pip-version-check "${VENV_PINS[@]}" >&2 \
        || die "pip install ${VENV_PINS[*]} failed (is PyPI reachable? does python3 $(python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])') suit these pins?)"
    venv_ok || die "$VENV does not hold ${VENV_PINS[*]} after installing them"
}

# ----------------------------------------------------------------------- source
source_ok() {
    [ -f "$SRC_DIR/.zhiku-sdist-sha256" ] \
        && [ "$(cat "$SRC_DIR/.zhiku-sdist-sha256")" = "$SDIST_SHA256" ] \
        && [ -f "$LLAMA_SRC/CMakeLists.txt" ] \
        && [ -f "$LLAMA_SRC/tools/server/CMakeLists.txt" ] \
        && [ -f "$LLAMA_SRC/gguf-py/gguf/__init__.py" ]
}

ensure_source() {
    if source_ok; then return; fi
    ensure_venv
    rm -rf "$BASE"/.sdist.*            # leftovers of an interrupted run
    local tmp tarball
    tmp="$(mktemp -d "$BASE/.sdist.XXXXXX")"
    log "downloading the llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist (llama.cpp's source, 77 MB) from PyPI"
    # --no-build-isolation: pip reads the sdist's metadata with the venv's
    # scikit-build-core instead of installing a build environment for it.
    "$PY" -m pip download -q --disable-pip-version-check --no-deps \
        --no-binary llama-cpp-python --no-build-isolation \
        "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION" -d "$tmp/dl" >&2 \
        || die "pip download of the llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION sdist failed"
    tarball="$tmp/dl/$SDIST_NAME.tar.gz"
    [ -f "$tarball" ] || die "pip did not produce $SDIST_NAME.tar.gz (got: $(ls "$tmp/dl"))"
    echo "$SDIST_SHA256  $tarball" | sha256sum --quiet --check - \
        || die "$SDIST_NAME.tar.gz does not match the pinned SHA-256"
    log "unpacking $SDIST_NAME.tar.gz"
    tar -xzf "$tarball" -C "$tmp" || die "could not unpack $tarball"
    [ -f "$tmp/$SDIST_NAME/vendor/llama.cpp/CMakeLists.txt" ] \
        || die "$SDIST_NAME.tar.gz holds no vendor/llama.cpp/CMakeLists.txt"
    echo "$SDIST_SHA256" >"$tmp/$SDIST_NAME/.zhiku-sdist-sha256"
    rm -rf "$SRC_DIR"
    mv "$tmp/$SDIST_NAME" "$SRC_DIR"
    rm -rf "$tmp"
    source_ok || die "$SRC_DIR is incomplete after unpacking"
}

# ------------------------------------------------------------------------ build
server_built() {
    [ -x "$SERVER_BIN" ] && [ -f "$SERVER_DIR/.zhiku-build" ] \
        && [ "$(cat "$SERVER_DIR/.zhiku-build")" = "$BUILD_STAMP_TEXT" ]
}

ensure_server_binary() {
    if server_built; then return; fi
    take_lock
    if server_built; then return; fi   # built meanwhile by the lock's holder
    ensure_toolchain
    ensure_venv
    ensure_source
    local -a args
    read -r -a args <<<"$BUILD_CMAKE_ARGS"
    # The build tree survives an interruption (ninja then resumes it), but
    # only when it was configured with the same flags.
    if [ -d "$BUILD_TREE" ] && [ "$(cat "$BUILD_TREE/.zhiku-build" 2>/dev/null)" != "$BUILD_STAMP_TEXT" ]; then
        log "discarding $BUILD_TREE (configured with other flags)"
        rm -rf "$BUILD_TREE"
    fi
    mkdir -p "$BUILD_TREE"
    echo "$BUILD_STAMP_TEXT" >"$BUILD_TREE/.zhiku-build"
    local t0=$SECONDS
    log "building llama-server from llama.cpp (llama-cpp-python $LLAMA_CPP_PYTHON_VERSION), CPU only, $BUILD_JOBS jobs: 15-30 min on 2 cores"
    log "cmake flags: $BUILD_CMAKE_ARGS"
    PATH="$VENV/bin:$PATH" cmake -S "$LLAMA_SRC" -B "$BUILD_TREE" -G Ninja "${args[@]}" >&2 \
        || die "cmake could not configure llama.cpp in $BUILD_TREE (flags: $BUILD_CMAKE_ARGS)"
    PATH="$VENV/bin:$PATH" nice -n 10 ninja -C "$BUILD_TREE" -j "$BUILD_JOBS" llama-server >&2 \
        || die "building llama-server failed (build tree kept in $BUILD_TREE; re-run to resume)"
    [ -x "$BUILD_TREE/bin/llama-server" ] || die "ninja finished but $BUILD_TREE/bin/llama-server is missing"
    "$BUILD_TREE/bin/llama-server" --version >/dev/null 2>&1 \
        || die "the built $BUILD_TREE/bin/llama-server does not run ('--version' failed)"
    rm -rf "$BASE"/.llama-server-"$LLAMA_CPP_PYTHON_VERSION".partial.*
    local stage
    stage="$(mktemp -d "$BASE/.llama-server-$LLAMA_CPP_PYTHON_VERSION.partial.XXXXXX")"
    mkdir -p "$stage/bin"
    cp "$BUILD_TREE/bin/llama-server" "$stage/bin/llama-server"
    echo "$BUILD_STAMP_TEXT" >"$stage/.zhiku-build"
    chmod 755 "$stage"
    rm -rf "$SERVER_DIR"
    mv "$stage" "$SERVER_DIR"
    rm -rf "$BUILD_TREE"
    server_built || die "$SERVER_BIN is not in place after the build"
    log "llama-server built in $((SECONDS - t0)) s: $SERVER_BIN"
}

# -------------------------------------------------------------------- stand-in
standin_stamp_text() {
    local script_sha
    script_sha="$(sha256sum "$STANDIN_SCRIPT" | cut -d' ' -f1)"
    echo "make-rerank-standin.py $script_sha, gguf-py of llama-cpp-python $LLAMA_CPP_PYTHON_VERSION"
}

standin_ok() {
    [ -s "$STANDIN_GGUF" ] && [ -s "$STANDIN_DIR/hf/model.safetensors" ] \
        && [ -s "$STANDIN_DIR/hf/config.json" ] && [ -s "$STANDIN_DIR/hf/tokenizer.json" ] \
        && [ -f "$STANDIN_DIR/.zhiku-standin" ] \
        && [ "$(cat "$STANDIN_DIR/.zhiku-standin")" = "$(standin_stamp_text)" ]
}

MINILM_FILES=(model.safetensors config.json tokenizer.json vocab.txt)

minilm_ok() {
    local f
    for f in "${MINILM_FILES[@]}"; do [ -s "$MINILM_DIR/$f" ] || return 1; done
}

ensure_minilm() {
    if minilm_ok; then return; fi
    log "the MiniLM test model is not in $MINILM_DIR: running scripts/fetch-test-model.sh"
    local got
    got="$(PYTHON="$PY" bash "$SCRIPT_DIR/fetch-test-model.sh" | tail -n 1)" \
        || die "scripts/fetch-test-model.sh failed"
    [ "$got" = "$MINILM_DIR" ] || die "fetch-test-model.sh put the model in '$got', not $MINILM_DIR"
    minilm_ok || die "$MINILM_DIR lacks one of ${MINILM_FILES[*]} after fetch-test-model.sh"
}

ensure_standin() {
    [ -f "$STANDIN_SCRIPT" ] || die "$STANDIN_SCRIPT is missing"
    if standin_ok; then return; fi
    take_lock
    if standin_ok; then return; fi
    ensure_venv
    ensure_source
    ensure_minilm
    mkdir -p "$MODELS_DIR"
    rm -rf "$MODELS_DIR"/.rerank-standin.*
    local tmp
    tmp="$(mktemp -d "$MODELS_DIR/.rerank-standin.XXXXXX")"
    log "making the stand-in cross-encoder from $MINILM_DIR"
    PYTHONPATH="$LLAMA_SRC/gguf-py" "$PY" "$STANDIN_SCRIPT" "$MINILM_DIR" "$tmp" >&2 \
        || die "make-rerank-standin.py failed"
    [ -s "$tmp/standin.gguf" ] && [ -s "$tmp/hf/model.safetensors" ] \
        || die "make-rerank-standin.py wrote no standin.gguf or hf/model.safetensors"
    standin_stamp_text >"$tmp/.zhiku-standin"
    chmod 755 "$tmp"
    rm -rf "$STANDIN_DIR"
    mv "$tmp" "$STANDIN_DIR"
    standin_ok || die "$STANDIN_DIR is incomplete after making it"
    log "stand-in ready: $STANDIN_DIR ($(du -sh "$STANDIN_DIR" | cut -f1))"
}

install_all() {
    ensure_server_binary
    ensure_standin
}

# ----------------------------------------------------------------------- server
server_pid() {
    local pid
    [ -f "$PIDFILE" ] || return 1
    pid="$(cat "$PIDFILE")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
    # A stale pid file may name a pid since reused by another process: only
    # one whose command line is our server's counts.
    if [ -r "/proc/$pid/cmdline" ]; then
        tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "--alias $MODEL_ALIAS --reranking" || return 1
    fi
    echo "$pid"
}

# The "--host H --port P" our server at $1 was started with.
server_addr() {
    tr '\0' ' ' <"/proc/$1/cmdline" 2>/dev/null | grep -o -- '--host [^ ]* --port [^ ]*' | head -n 1
}

models_answer() {
    # Prints the model ids when GET /v1/models answers 200 (llama-server
    # answers 503 while it loads); the system python, not curl, since a fresh
    # Debian may lack curl.
    python3 - "$URL/v1/models" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as r:
    ids = [m["id"] for m in json.load(r)["data"]]
print(",".join(ids))
EOF
}

start() {
    install_all
    local pid ids
    if pid="$(server_pid)"; then
        local addr
        addr="$(server_addr "$pid")"
        if [ -n "$addr" ] && [ "$addr" != "--host $HOST --port $PORT" ]; then
            die "this script's server already runs elsewhere (pid $pid, $addr); stop it first (rerank-server.sh stop) or give a second one its own ZHIKU_RERANK_HOME"
        fi
        if ids="$(models_answer)" && [ "$ids" = "$MODEL_ALIAS" ]; then
            log "already running (pid $pid, model $ids); stand-in: $STANDIN_DIR"
            echo "$URL"
            return
        fi
        log "pid $pid is alive but does not serve $MODEL_ALIAS on $URL; restarting it"
        stop
    fi
    if ids="$(models_answer)"; then
        if [ "$ids" = "$MODEL_ALIAS" ]; then
            # Started by another checkout's copy of this script: the same server, use it.
            log "$URL already serves $MODEL_ALIAS (not started from $BASE); using it"
            echo "$URL"
            return
        fi
        die "something else already serves $URL (model \"$ids\"); not started: stop it or choose another ZHIKU_RERANK_PORT"
    fi
    log "starting llama-server --reranking on $HOST:$PORT, $THREADS thread(s) (log: $LOGFILE)"
    local waited
    launch "$SERVER_BIN" -m "$STANDIN_GGUF" --alias "$MODEL_ALIAS" --reranking \
        --host "$HOST" --port "$PORT" -t "$THREADS" -c "$N_CTX" -ub "$UBATCH"
    await_ready "llama-server"
    [ "$ids" = "$MODEL_ALIAS" ] || { stop; die "$URL answers with model \"$ids\", not $MODEL_ALIAS"; }
    log "ready after ${waited}s: pid $pid, model id \"$ids\"; stand-in: $STANDIN_DIR"
    echo "$URL"
}



case "${1:-start}" in
    start)   start ;;
    stop)    stop ;;
    restart) stop; start ;;
    status)  server_status "; stand-in: $STANDIN_DIR" ;;
    install) install_all; echo "$STANDIN_DIR" ;;
    model|standin) ensure_standin; echo "$STANDIN_DIR" ;;
    *) echo "usage: $0 [start|stop|restart|status|install|model|standin]" >&2; exit 2 ;;
esac
