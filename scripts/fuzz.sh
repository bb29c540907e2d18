#!/usr/bin/env bash
# Runs zhiku's fuzz targets (fuzz/, see fuzz/README.md) for a bounded time each and prints one
# summary line per target. Stops by itself.
#
# Usage:
#   scripts/fuzz.sh [SECONDS_PER_TARGET] [TARGET...]   fuzz (default: 120 s each, all targets)
#   scripts/fuzz.sh list                               the targets
#   scripts/fuzz.sh tmin TARGET ARTIFACT               minimise a crash/timeout/OOM input
#   scripts/fuzz.sh repro TARGET INPUT...              run inputs once (a crash shows its stack)
#
# Before fuzzing a target, its saved regressions (fuzz/regressions/TARGET/*) are run once each:
# a regression that still fails is reported on the summary line (and fuzzing goes on).
#
# Installs cargo-fuzz (`cargo install cargo-fuzz --locked`) when missing. cargo-fuzz needs
# nightly compiler flags (-Zsanitizer, sanitizer coverage); on a stable toolchain they are
# enabled with RUSTC_BOOTSTRAP=1, which this script sets.
#
# Seeds come from the format fixtures (tests/fixtures/formats*), the example knowledge base
# (examples/kb: Markdown front matter and sidecars) and fuzz/seeds/TARGET; they are copied into
# a corpus folder outside the repository, which keeps growing from run to run.
#
# Environment (defaults in brackets):
#   CARGO_TARGET_DIR        build folder [~/.cache/zhiku/fuzz-target]
#   ZHIKU_FUZZ_CORPUS       corpus folders, one per target [~/.cache/zhiku/fuzz-corpus]
#   ZHIKU_FUZZ_ARTIFACTS    crash/timeout/OOM inputs, one folder per target
#                           [~/.cache/zhiku/fuzz-artifacts]
#   ZHIKU_FUZZ_LOGS         one log per target and run summaries [~/.cache/zhiku/fuzz-logs]
#   ZHIKU_FUZZ_JOBS         cargo build jobs [1]      ZHIKU_FUZZ_NICE   nice level [19]
#   ZHIKU_FUZZ_RSS_MB       libFuzzer -rss_limit_mb (also the largest single allocation) [2048]
#   ZHIKU_FUZZ_TIMEOUT      libFuzzer -timeout, seconds for one input [10]
#   ZHIKU_FUZZ_SANITIZER    address | none (none builds and runs faster; stack overflows,
#                           panics, timeouts and OOMs are still caught) [address]
#   ZHIKU_FUZZ_KEEP_GOING=1 fork mode: go on after a finding, so one run can find several
#                           (-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
#   ZHIKU_FUZZ_NO_BUILD=1   use the binaries already built
#   ZHIKU_FUZZ_PANIC_ABORT=1  report panics the PDF and HTML extractors catch by design too
#
# Exit status: 0 when no target found anything (and every regression passes), 1 otherwise,
# 2 on a usage or build error.

set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ_DIR="$ROOT/fuzz"
CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/zhiku"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$CACHE/fuzz-target}"
CORPUS_ROOT="${ZHIKU_FUZZ_CORPUS:-$CACHE/fuzz-corpus}"
ARTIFACT_ROOT="${ZHIKU_FUZZ_ARTIFACTS:-$CACHE/fuzz-artifacts}"
LOG_ROOT="${ZHIKU_FUZZ_LOGS:-$CACHE/fuzz-logs}"
JOBS="${ZHIKU_FUZZ_JOBS:-1}"
NICE="${ZHIKU_FUZZ_NICE:-19}"
RSS_MB="${ZHIKU_FUZZ_RSS_MB:-2048}"
TIMEOUT="${ZHIKU_FUZZ_TIMEOUT:-10}"
SANITIZER="${ZHIKU_FUZZ_SANITIZER:-address}"
export RUSTC_BOOTSTRAP=1
export CARGO_BUILD_JOBS="$JOBS"

die() { echo "fuzz.sh: $*" >&2; exit 2; }

all_targets() {
    sed -n 's/^name = "\([a-z_0-9]*\)"$/\1/p' "$FUZZ_DIR/Cargo.toml" | grep -vx 'zhiku-fuzz'
}

ensure_cargo_fuzz() {
    if ! cargo fuzz --version >/dev/null 2>&1; then
        echo "fuzz.sh: installing cargo-fuzz (cargo install cargo-fuzz --locked)" >&2
        nice -n "$NICE" cargo install cargo-fuzz --locked -j "$JOBS" >&2 ||
            die "cannot install cargo-fuzz"
    fi
}

host_triple() { rustc -vV | sed -n 's/^host: //p'; }

binary() { echo "$CARGO_TARGET_DIR/$(host_triple)/release/$1"; }

build() { # build TARGET... (all when every target is asked for)
    [[ "${ZHIKU_FUZZ_NO_BUILD:-0}" == 1 ]] && return 0
    local args=(--fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER")
    if [[ $# -eq $(all_targets | wc -l) ]]; then
        echo "fuzz.sh: building all targets (sanitizer: $SANITIZER, $JOBS job(s))" >&2
        nice -n "$NICE" cargo fuzz build "${args[@]}" >&2 || die "build failed"
    else
        local t
        for t in "$@"; do
            echo "fuzz.sh: building $t (sanitizer: $SANITIZER, $JOBS job(s))" >&2
            nice -n "$NICE" cargo fuzz build "${args[@]}" "$t" >&2 || die "build of $t failed"
        done
    fi
}

libfuzzer_flags() {
    echo "-rss_limit_mb=$RSS_MB -timeout=$TIMEOUT"
}

# seed FILE NAME_PREFIX DIR [PREFIX_BYTE_OCTAL]: copies FILE into DIR (with a leading byte).
seed() {
    local file="$1" dir="$2" byte="${3:-}"
    [[ -f "$file" ]] || return 0
    local name="seed-$(basename "$file")"
    if [[ -n "$byte" ]]; then
        { printf "\\$byte"; cat "$file"; } >"$dir/$name.$byte"
    else
        cp "$file" "$dir/$name"
    fi
}

# front_matter_block FILE: the YAML between a Markdown file's opening `---` lines.
front_matter_block() {
    awk 'NR == 1 && $0 != "---" { exit } NR == 1 { next } $0 == "---" { exit } { print }' "$1"
}

prepare_corpus() { # prepare_corpus TARGET -> echoes the corpus folder
    local t="$1" dir="$CORPUS_ROOT/$1" f
    local fx="$ROOT/tests/fixtures/formats" fe="$ROOT/tests/fixtures/formats-edited"
    mkdir -p "$dir"
    shopt -s nullglob globstar
    case "$t" in
        pdf) for f in "$fx"/*.pdf "$fe"/*.pdf; do seed "$f" "$dir"; done ;;
        docx | pptx | epub) for f in "$fx"/*."$t" "$fe"/*."$t"; do seed "$f" "$dir"; done ;;
        html) for f in "$fx"/*.html "$fe"/*.html; do seed "$f" "$dir"; done ;;
        sheet_csv) for f in "$fx"/*.csv "$fe"/*.csv; do seed "$f" "$dir"; done ;;
        sheet_xlsx) for f in "$fx"/*.xlsx "$fe"/*.xlsx; do seed "$f" "$dir"; done ;;
        formats_detect)
            # The first byte picks the announced extension (EXTENSIONS in the target):
            # pdf 0, docx 1, pptx 2, xlsx 3, epub 5, html 6, csv 9 (octal escapes here).
            for f in "$fx"/*.pdf; do seed "$f" "$dir" 000; done
            for f in "$fx"/*.docx; do seed "$f" "$dir" 001; done
            for f in "$fx"/*.pptx; do seed "$f" "$dir" 002; done
            for f in "$fx"/*.xlsx; do seed "$f" "$dir" 003; done
            for f in "$fx"/*.epub; do seed "$f" "$dir" 005; done
            for f in "$fx"/*.html; do seed "$f" "$dir" 006; done
            for f in "$fx"/*.csv; do seed "$f" "$dir" 011; done
            ;;
        front_matter)
            for f in "$ROOT"/examples/kb/**/*.md; do
                local name
                name="$(echo "${f#"$ROOT"/examples/kb/}" | tr '/' '_')"
                cp "$f" "$dir/seed-md-$name"
                if [[ "$(head -n 1 "$f")" == "---" ]]; then
                    front_matter_block "$f" >"$dir/seed-yaml-$name"
                fi
            done
            for f in "$ROOT"/examples/kb/**/*.metadata.yaml; do
                cp "$f" "$dir/seed-sidecar-$(basename "$f")"
            done
            ;;
    esac
    for f in "$FUZZ_DIR/seeds/$t"/*; do seed "$f" "$dir"; done
    shopt -u nullglob globstar
    echo "$dir"
}

# run_regressions TARGET -> echoes "N/M" (passing/total), or nothing when there are none.
run_regressions() {
    local t="$1" bin f pass=0 total=0
    bin="$(binary "$t")"
    shopt -s nullglob
    local files=("$FUZZ_DIR/regressions/$t"/*)
    shopt -u nullglob
    [[ ${#files[@]} -eq 0 ]] && return 0
    mkdir -p "$LOG_ROOT"
    for f in "${files[@]}"; do
        total=$((total + 1))
        # shellcheck disable=SC2046
        if timeout -k 10 $((TIMEOUT * 3 + 30)) "$bin" $(libfuzzer_flags) "$f" \
            >>"$LOG_ROOT/$t.regressions.log" 2>&1; then
            pass=$((pass + 1))
        else
            echo "fuzz.sh: regression still fails: $f (log: $LOG_ROOT/$t.regressions.log)" >&2
        fi
    done
    echo "$pass/$total"
}

# summarise TARGET LOG SECONDS ARTIFACT_DIR REGRESSIONS -> one line; returns 1 on a finding.
summarise() {
    local t="$1" log="$2" secs="$3" adir="$4" regressions="$5"
    local runs corpus line findings=() found=0 a reason
    # The final stats of a plain run; a fork-mode run (KEEP_GOING) counts in its `#N:` lines.
    runs=""
    if [[ "${ZHIKU_FUZZ_KEEP_GOING:-0}" != 1 ]]; then
        runs="$(grep -o 'stat::number_of_executed_units: [0-9]*' "$log" | tail -n 1 | grep -o '[0-9]*$')"
    fi
    if [[ -z "$runs" ]]; then
        runs="$(grep -o '^#[0-9]*' "$log" | tail -n 1 | tr -d '#')"
    fi
    corpus="$(find "$CORPUS_ROOT/$t" -type f | wc -l)"
    while read -r a; do
        [[ -z "$a" ]] && continue
        found=1
        reason="$(grep -m 1 -E 'panicked at|ERROR: libFuzzer|ERROR: AddressSanitizer|Assertion|panic escaped' "$log" |
            sed -E 's/^==[0-9]+== ?//' | cut -c 1-160)"
        findings+=("$(basename "$a" | cut -d- -f1) -> $a${reason:+ [$reason]}")
    done < <(grep -o 'Test unit written to [^ ]*' "$log" | sed 's/^Test unit written to //' | sort -u)
    line="$t: ${runs:-?} runs in ${secs} s, corpus ${corpus} files"
    [[ -n "$regressions" ]] && line+=", regressions passing ${regressions}"
    if [[ $found -eq 0 ]]; then
        line+=", no findings"
    else
        line+=", ${#findings[@]} finding(s): $(printf '%s; ' "${findings[@]}")"
        line="${line%; }"
    fi
    echo "$line"
    [[ $found -eq 0 && ( -z "$regressions" || "${regressions%/*}" == "${regressions#*/}" ) ]]
}

fuzz_one() { # fuzz_one TARGET SECONDS
    local t="$1" secs="$2" bin corpus adir log regressions start end extra=()
    bin="$(binary "$t")"
    [[ -x "$bin" ]] || die "no binary for $t at $bin (build first)"
    corpus="$(prepare_corpus "$t")"
    adir="$ARTIFACT_ROOT/$t"
    mkdir -p "$adir" "$LOG_ROOT"
    log="$LOG_ROOT/$t.log"
    regressions="$(run_regressions "$t")"
    if [[ "${ZHIKU_FUZZ_KEEP_GOING:-0}" == 1 ]]; then
        extra=(-fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1)
    fi
    start=$(date +%s)
    # libFuzzer stops at -max_total_time; `timeout` is the backstop should it not.
    # shellcheck disable=SC2046
    timeout -k 30 $((secs + 120)) nice -n "$NICE" "$bin" \
        -max_total_time="$secs" $(libfuzzer_flags) -print_final_stats=1 \
        -artifact_prefix="$adir/" "${extra[@]}" "$corpus" >"$log" 2>&1
    end=$(date +%s)
    summarise "$t" "$log" "$((end - start))" "$adir" "$regressions"
}

case "${1:-}" in
    list)
        all_targets
        exit 0
        ;;
    tmin)
        [[ $# -eq 3 ]] || die "usage: scripts/fuzz.sh tmin TARGET ARTIFACT"
        ensure_cargo_fuzz
        # shellcheck disable=SC2046
        exec nice -n "$NICE" cargo fuzz tmin --fuzz-dir "$FUZZ_DIR" --sanitizer "$SANITIZER" \
            -r 2000 "$2" "$3" -- $(libfuzzer_flags)
        ;;
    repro)
        [[ $# -ge 3 ]] || die "usage: scripts/fuzz.sh repro TARGET INPUT..."
        t="$2"
        shift 2
        # shellcheck disable=SC2046
        exec "$(binary "$t")" $(libfuzzer_flags) "$@"
        ;;
esac

SECS=120
if [[ $# -gt 0 && "$1" =~ ^[0-9]+$ ]]; then
    SECS="$1"
    shift
fi
mapfile -t KNOWN < <(all_targets)
if [[ $# -gt 0 ]]; then
    TARGETS=("$@")
    for t in "${TARGETS[@]}"; do
        printf '%s\n' "${KNOWN[@]}" | grep -qx "$t" || die "unknown target $t (scripts/fuzz.sh list)"
    done
else
    TARGETS=("${KNOWN[@]}")
fi

ensure_cargo_fuzz
build "${TARGETS[@]}"

mkdir -p "$LOG_ROOT"
SUMMARY="$LOG_ROOT/summary-$(date +%Y%m%d-%H%M%S).txt"
status=0
echo "fuzz.sh: ${#TARGETS[@]} target(s), ${SECS} s each; logs in $LOG_ROOT" >&2
for t in "${TARGETS[@]}"; do
    if ! line="$(fuzz_one "$t" "$SECS")"; then
        status=1
    fi
    echo "$line" | tee -a "$SUMMARY"
done
echo "fuzz.sh: summary written to $SUMMARY" >&2
exit "$status"
