#!/usr/bin/env bash
# Regenerate the document-format fixtures in tests/fixtures/formats/.
#
# Every fixture is produced by a real tool (fpdf2, reportlab, pypdf,
# python-docx, python-pptx, openpyxl, ebooklib, the csv module) from text
# written in tests/fixtures/formats/make.py, and each gets a
# <name>.expect.json describing what extraction must find.
#
# The tools live in a dedicated venv:
#   ${ZHIKU_FIXTURE_VENV:-$HOME/.cache/zhiku/fixture-venv}
# created on first use with pinned versions, so regenerating is repeatable.
# The Chinese PDF embeds Droid Sans Fallback (Debian: fonts-droid-fallback),
# which has CJK glyphs only; digits, Latin letters, “” and · come from
# DejaVu Sans (Debian: fonts-dejavu-core) through fpdf2's fallback fonts.
#
# Usage: scripts/make-format-fixtures.sh [--no-verify]
#   --no-verify  skip the pdfminer.six text-layer check at the end
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ZHIKU_FIXTURE_VENV:-$HOME/.cache/zhiku/fixture-venv}"
PYTHON="${PYTHON:-python3}"
FONT="/usr/share/fonts/truetype/droid/DroidSansFallbackFull.ttf"
LATIN_FONT="/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"

# Pinned tool versions; the fixtures' bytes depend on them.
PINS=(
  "fpdf2==2.8.9"
  "reportlab==5.1.0"
  "python-docx==1.2.0"
  "python-pptx==1.0.2"
  "openpyxl==3.1.5"
  "ebooklib==0.20"
  "pypdf==7.1.0"
  "pdfminer.six==20260107"
  # pypdf needs it for AES encryption (encrypted.pdf).
  "cryptography==50.0.2"
)

die() { echo "make-format-fixtures: $*" >&2; exit 1; }

apt_install() {
  local sudo=()
  [[ $(id -u) -eq 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get install -y "$@" || { "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y "$@"; }
}
if [[ ! -f "$FONT" ]]; then
  echo "make-format-fixtures: installing fonts-droid-fallback" >&2
  apt_install fonts-droid-fallback
  [[ -f "$FONT" ]] || die "font still missing: $FONT"
fi
if [[ ! -f "$LATIN_FONT" ]]; then
  echo "make-format-fixtures: installing fonts-dejavu-core" >&2
  apt_install fonts-dejavu-core
  [[ -f "$LATIN_FONT" ]] || die "font still missing: $LATIN_FONT"
fi

if [[ ! -x "$VENV/bin/python" ]]; then
  echo "make-format-fixtures: creating venv $VENV" >&2
  "$PYTHON" -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip
  "$VENV/bin/pip" install --quiet "${PINS[@]}"
else
  # Make sure an existing venv carries the pinned versions.
  missing=()
  for pin in "${PINS[@]}"; do
    name="${pin%%==*}"
    want="${pin##*==}"
    have="$("$VENV/bin/pip" show "$name" 2>/dev/null | sed -n 's/^Version: //p')"
    [[ "$have" == "$want" ]] || missing+=("$pin")
  done
  if (( ${#missing[@]} )); then
    echo "make-format-fixtures: installing ${missing[*]}" >&2
    "$VENV/bin/pip" install --quiet "${missing[@]}"
  fi
fi

export ZHIKU_FIXTURE_FONT="$FONT" ZHIKU_FIXTURE_LATIN_FONT="$LATIN_FONT"
exec "$VENV/bin/python" "$ROOT/tests/fixtures/formats/make.py" "$@"
