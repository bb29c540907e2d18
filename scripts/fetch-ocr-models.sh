#!/usr/bin/env bash
# Fetches what the PP-OCR engine (crates/adapters-ppocr) needs into one folder, from PyPI wheels
# only (no model hub, no GitHub release, no CDN), each wheel and each file checked by SHA-256:
#
#   PP-OCRv6_det_small.onnx, PP-OCRv6_rec_small.onnx,     from rapidocr 3.10.0 (Apache-2.0;
#   ch_ppocr_mobile_v2.0_cls_mobile.onnx,                   the models are Baidu's PaddleOCR
#   MODEL_LICENSES.md, LICENSE-rapidocr                     models, see MODEL_LICENSES.md)
#   libonnxruntime.so.1.32.0, LICENSE-onnxruntime,        from onnxruntime 1.32.0 (MIT), the
#   ThirdPartyNotices-onnxruntime.txt                       manylinux_2_28 x86_64 wheel
#
#   scripts/fetch-ocr-models.sh [DEST]     DEST defaults to ~/.cache/zhiku/models/ppocr
#
# Idempotent: nothing is downloaded when every file is there with its checksum. Needs python3
# with pip (PYTHON to name another) and unzip. Prints DEST on its last line: zhiku's settings
# `ocr_models` (this folder) and `ocr_runtime` (DEST/libonnxruntime.so.1.32.0) default to it.
set -euo pipefail

DEST=${1:-${HOME:?}/.cache/zhiku/models/ppocr}
PYTHON=${PYTHON:-python3}

# The files and their SHA-256, as extracted from the pinned wheels.
FILES="\
090f04abcd9d9a7498bc4ebf677e4cb9bdce1fe4197ddb7e529f1ef44e1ff94f  PP-OCRv6_det_small.onnx
6f327246b50388f3c176ae304bd95767ea6dc0c9ae92153ef8cbe210b3c14884  PP-OCRv6_rec_small.onnx
e47acedf663230f8863ff1ab0e64dd2d82b838fceb5957146dab185a89d6215c  ch_ppocr_mobile_v2.0_cls_mobile.onnx
c5fd0e8603d3df743355b546121e6fe0f4ef8ff455c5a85c1681fd3ae520e153  MODEL_LICENSES.md
3e0af25fdd06aa9586ae97adb00ea927ebe5a3805ac77d2d3a81ce5f55693333  LICENSE-rapidocr
6c1585d1bbf45b0712ea4a21b705c5fcb4ba04ff2e30f1fbf81a49faf658638f  libonnxruntime.so.1.32.0
2f07c72751aed99790b8a4869cf2311df85a860b22ded05fa22803587a48922c  LICENSE-onnxruntime
d8696258afcf9df7827a5e01d6b6d55ee9b461b4e82020f5f48242deb9cc2270  ThirdPartyNotices-onnxruntime.txt
"

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)

if (cd "$DEST" && sha256sum --quiet --check --status - <<<"$FILES") 2>/dev/null; then
    echo "fetch-ocr-models: everything is in place" >&2
    echo "$DEST"
    exit 0
fi

case "$(uname -m)" in
    x86_64) ;;
    *) echo "fetch-ocr-models: only x86_64 Linux is pinned here (this is $(uname -m))" >&2; exit 1 ;;
esac
command -v unzip >/dev/null || { echo "fetch-ocr-models: needs unzip (apt-get install unzip)" >&2; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# pip checks each wheel against its hash (--require-hashes) before anything is extracted.
cat >"$WORK/models.txt" <<'REQ'
rapidocr==3.10.0 --hash=sha256:2fc34e26cd0f48514804a94f8832283039c7334076bff60768b1fed9ad068050
REQ
cat >"$WORK/runtime.txt" <<'REQ'
onnxruntime==1.32.0 --hash=sha256:5a34fc4dfeb5a7b4a74c95dcba1e773d722abda720b474edf1b0c419dc6d163d
REQ
pip_download() {
    "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        --require-hashes -d "$WORK/wheels" "$@" >&2
}
echo "fetch-ocr-models: downloading rapidocr 3.10.0 and onnxruntime 1.32.0 from PyPI" >&2
pip_download -r "$WORK/models.txt"
# Any CPython tag does: only the shared library is taken from the wheel.
pip_download --platform manylinux_2_28_x86_64 --python-version 3.11 --implementation cp \
    --abi cp311 -r "$WORK/runtime.txt"

mkdir -p "$WORK/out"
unzip -q -o -j "$WORK"/wheels/rapidocr-3.10.0-py3-none-any.whl \
    rapidocr/models/PP-OCRv6_det_small.onnx rapidocr/models/PP-OCRv6_rec_small.onnx \
    rapidocr/models/ch_ppocr_mobile_v2.0_cls_mobile.onnx \
    rapidocr-3.10.0.dist-info/licenses/MODEL_LICENSES.md \
    rapidocr-3.10.0.dist-info/licenses/LICENSE -d "$WORK/out"
mv "$WORK/out/LICENSE" "$WORK/out/LICENSE-rapidocr"
unzip -q -o -j "$WORK"/wheels/onnxruntime-1.32.0-*.whl onnxruntime/capi/libonnxruntime.so.1.32.0 \
    onnxruntime/LICENSE onnxruntime/ThirdPartyNotices.txt -d "$WORK/out"
mv "$WORK/out/LICENSE" "$WORK/out/LICENSE-onnxruntime"
mv "$WORK/out/ThirdPartyNotices.txt" "$WORK/out/ThirdPartyNotices-onnxruntime.txt"

(cd "$WORK/out" && sha256sum --quiet --check - <<<"$FILES") >&2
# Into place only once every file checked out.
for f in "$WORK"/out/*; do
    mv -f "$f" "$DEST/"
done
echo "fetch-ocr-models: PP-OCRv6 small and ONNX Runtime 1.32.0 in $DEST" >&2
echo "$DEST"
