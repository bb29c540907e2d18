#!/usr/bin/env bash
# OCR benchmark setup (idempotent). Installs what bench/ocr/*.py need:
#   - Debian: tesseract-ocr (+ chi-sim, chi-tra, eng data), the fonts the fixtures are
#     drawn with (fonts-noto-cjk: Noto Sans/Serif CJK SC+TC; fonts-liberation: Latin serif;
#     fonts-droid-fallback + fonts-dejavu-core: the text-layer PDFs, as bench/formats uses).
#     Each package only when missing, with apt-get install -y --no-install-recommends.
#   - a venv at ${ZHIKU_OCR_VENV:-$HOME/.cache/zhiku/venv-ocr} with pinned PyPI packages.
#     rapidocr-onnxruntime 1.4.4 ships its ONNX models inside the wheel (PP-OCRv4 mobile
#     det + rec for Chinese/English, ppocr mobile v2.0 direction classifier), so it runs
#     offline; rapidocr 3.x fetches models from a model hub at first use, which this
#     workplace cannot reach, so it is not used.
# Usage: bash bench/ocr/setup.sh        (prints the venv's python path on the last line)
set -euo pipefail

VENV="${ZHIKU_OCR_VENV:-$HOME/.cache/zhiku/venv-ocr}"
PYTHON="${PYTHON:-python3}"

PINS=(
  "numpy==2.4.6"
  "pillow==13.0.0"
  "onnxruntime==1.32.0"
  "opencv-python==5.1.0.95"
  "pyclipper==1.4.0"
  "shapely==2.2.0"
  "PyYAML==6.0.4"
  "six==1.17.0"
  "tqdm==4.70.1"
  "rapidocr-onnxruntime==1.4.4"
  "OpenCC==1.4.2"
  "fpdf2==2.8.9"
  "fonttools==4.68.0"
  "defusedxml==0.7.1"
  "rapidfuzz==3.14.6"
  "flatbuffers==25.12.19"
  "packaging==26.4"
  "protobuf==7.36.2"
)
DEBS=(tesseract-ocr tesseract-ocr-chi-sim tesseract-ocr-chi-tra tesseract-ocr-eng
      fonts-noto-cjk fonts-liberation fonts-droid-fallback fonts-dejavu-core)

say() { echo "bench/ocr/setup: $*" >&2; }

missing_debs=()
for p in "${DEBS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing_debs+=("$p")
done
if (( ${#missing_debs[@]} )); then
  sudo=(); [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  say "apt-get install ${missing_debs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing_debs[@]}" \
    || { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y --no-install-recommends "${missing_debs[@]}"; }
fi

# rapidocr-onnxruntime 1.4.4 declares Requires-Python <3.13: pick an interpreter that fits.
py_ok() { "$1" -c 'import sys; sys.exit(not ((3, 8) <= sys.version_info[:2] < (3, 13)))' 2>/dev/null; }
if ! py_ok "$PYTHON"; then
  for cand in python3.12 python3.11 python3.10 /usr/bin/python3; do
    if command -v "$cand" >/dev/null && py_ok "$cand"; then PYTHON="$cand"; break; fi
  done
  py_ok "$PYTHON" || { say "need a Python 3.8-3.12 for rapidocr-onnxruntime 1.4.4"; exit 1; }
fi
if [[ ! -x "$VENV/bin/python" ]]; then
  say "creating venv $VENV"
  "$PYTHON" -m venv "$VENV" || { say "python venv module missing: apt-get install python3-venv"; exit 1; }
  "$VENV/bin/pip" install --quiet --upgrade pip
fi
missing=()
for pin in "${PINS[@]}"; do
  name="${pin%%==*}"
  have="$("$VENV/bin/pip" show "$name" 2>/dev/null | sed -n 's/^Version: //p' || true)"
  [[ "$have" == "${pin##*==}" ]] || missing+=("$pin")
done
if (( ${#missing[@]} )); then
  say "pip install ${missing[*]}"
  "$VENV/bin/pip" install --quiet "${PINS[@]}"
fi

# The wheel must carry its models: fail here rather than at OCR time.
"$VENV/bin/python" - <<'PY'
import pathlib, rapidocr_onnxruntime as r
models = sorted(p.name for p in (pathlib.Path(r.__file__).parent / "models").glob("*.onnx"))
assert any("det" in m for m in models) and any("rec" in m for m in models), models
PY
say "ok: $(tesseract --version 2>&1 | head -1); venv $VENV"
echo "$VENV/bin/python"
