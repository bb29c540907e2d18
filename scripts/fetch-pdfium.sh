#!/usr/bin/env bash
# Fetches PDFium, the renderer that draws text-layer PDF pages as pictures (the cited page shown
# with its quote highlighted, `GET /v1/originals/{id}/pages/{n}`), from a PyPI wheel only:
#
#   libpdfium.so (PDFium build 8149)      from pypdfium2 5.15.2, the manylinux_2_17 x86_64
#   BUILD_LICENSES/ (PDFium and the        wheel (PDFium: BSD-3-Clause / Apache-2.0; the
#   libraries built into it)                licences of what it links are kept beside it)
#
#   scripts/fetch-pdfium.sh [DEST]     DEST defaults to ~/.cache/zhiku/pdfium
#
# Idempotent: nothing is downloaded when the library is there with its checksum. Needs python3
# with pip (PYTHON to name another) and unzip. Prints DEST on its last line: zhiku's setting
# `pdfium` (DEST/libpdfium.so) defaults to it.
set -euo pipefail

DEST=${1:-${HOME:?}/.cache/zhiku/pdfium}
PYTHON=${PYTHON:-python3}
LIB_SHA=c76dc0f7839644bfa7c3e3107a6068df714e339c861bb7d4519907b821d427f9

mkdir -p "$DEST"
DEST=$(cd "$DEST" && pwd)

if [ -f "$DEST/libpdfium.so" ] && [ -d "$DEST/BUILD_LICENSES" ] &&
    echo "$LIB_SHA  $DEST/libpdfium.so" | sha256sum --quiet --check --status - 2>/dev/null; then
    echo "fetch-pdfium: in place" >&2
    echo "$DEST"
    exit 0
fi

case "$(uname -m)" in
    x86_64) ;;
    *) echo "fetch-pdfium: only x86_64 Linux is pinned here (this is $(uname -m))" >&2; exit 1 ;;
esac
command -v unzip >/dev/null || { echo "fetch-pdfium: needs unzip (apt-get install unzip)" >&2; exit 1; }

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# pip checks the wheel against its hash before anything is extracted.
cat >"$WORK/req.txt" <<'REQ'
pypdfium2==5.15.2 --hash=sha256:dc31aea5b0fb9fefc9b537a65f4113980b2c40798445736a7e6565bc85161e37
REQ
echo "fetch-pdfium: downloading pypdfium2 5.15.2 from PyPI" >&2
"$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
    --require-hashes --platform manylinux_2_17_x86_64 -d "$WORK/wheels" -r "$WORK/req.txt" >&2
unzip -q -o "$WORK"/wheels/pypdfium2-5.15.2-*.whl 'pypdfium2_raw/libpdfium.so' \
    'pypdfium2-5.15.2.dist-info/licenses/*' -d "$WORK/out"
echo "$LIB_SHA  $WORK/out/pypdfium2_raw/libpdfium.so" | sha256sum --quiet --check - >&2
rm -rf "$DEST/BUILD_LICENSES"
mv "$WORK/out/pypdfium2-5.15.2.dist-info/licenses/BUILD_LICENSES" "$DEST/BUILD_LICENSES"
# The library last: its presence with the right checksum is what "in place" means.
mv -f "$WORK/out/pypdfium2_raw/libpdfium.so" "$DEST/libpdfium.so"
echo "fetch-pdfium: PDFium build 8149 in $DEST" >&2
echo "$DEST"
