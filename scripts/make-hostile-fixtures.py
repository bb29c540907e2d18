#!/usr/bin/env python3
"""Writes the hostile input files of issue 35 into a folder, for tests that index them.

Each file is small on disk and attacks one bound of extraction; none of them may take the
indexing process down, and each should come out as one skipped file with its reason:

  deep-objstm.pdf      a PDF whose catalog, packed in a FlateDecode object stream
                       (/Type /ObjStm, with a cross-reference stream), holds arrays nested
                       1,000,000 deep (about 2.6 KB): the parser's recursion overflows its stack
                       unless nesting inside decompressed object streams is checked first.
  deep-array.pdf       the same nesting in a plain (uncompressed) top-level object (about 2 MB).
  deep-content.pdf     the same nesting as the operand of `TJ` in a compressed page content
                       stream (about 2.5 KB): the parser reads it when the page's text is read.
  many-attributes.html one tag with 200,000 attributes (the tokenizer's duplicate-attribute
                       check is quadratic: about 35 s unbounded).
  bomb.docx            a docx whose word/document.xml inflates to --docx-mib MiB (default 400)
                       of text runs, about 1/1000 of that zipped: peak memory was about 4x the
                       part before parts were read as a stream.
  yaml-bomb.md         Markdown whose front matter has a 20,000-item anchor referenced by three
                       levels of ten aliases (2x10^7 values, gigabytes once expanded).
  deep-flow.md         Markdown whose front matter nests 100,000 flow sequences ([[[...]]]).
  far-ttl.md           Markdown whose front matter says `ttl: 10000000d` (an expiry past the
                       year 9999).

Python 3 standard library only (zlib, zipfile); the output is a pure function of the arguments.

Usage:
    python3 scripts/make-hostile-fixtures.py OUT_DIR [--only NAME[,NAME...]] [--docx-mib N]
                                             [--depth N]

    OUT_DIR     folder to write into (created if missing); existing files of the same names
                are overwritten.
    --only      write only these files (names as above, e.g. --only deep-objstm.pdf,bomb.docx).
    --docx-mib  size of bomb.docx's word/document.xml once inflated, in MiB (default 400).
    --depth     nesting depth of the PDFs (default 1,000,000; with a small one, such as 5,
                deep-objstm.pdf and deep-array.pdf are ordinary readable files).

Example (an end-to-end run over a folder of hostile files):
    python3 scripts/make-hostile-fixtures.py /tmp/hostile && zhiku index /tmp/hostile
"""

from __future__ import annotations

import argparse
import os
import sys
import zipfile
import zlib

NAMES = (
    "deep-objstm.pdf",
    "deep-array.pdf",
    "deep-content.pdf",
    "many-attributes.html",
    "bomb.docx",
    "yaml-bomb.md",
    "deep-flow.md",
    "far-ttl.md",
)

# One page that shows "Hello" in Helvetica; used by both PDFs so that, at a harmless depth,
# they are ordinary readable files.
CONTENT = b"BT /F1 24 Tf 72 700 Td (Hello from a packed catalog) Tj ET\n"
PAGE = (
    b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
    b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>"
)


def nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def objstm_pdf(depth: int) -> bytes:
    """Catalog, page tree and page in a FlateDecode object stream, found through a
    cross-reference stream; the catalog carries `/Junk` nested `depth` deep."""
    packed = [
        (1, b"<< /Type /Catalog /Pages 2 0 R /Junk " + nested(depth) + b" >>"),
        (2, b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
        (3, PAGE),
    ]
    body = b""
    pairs = []
    for num, obj in packed:
        pairs.append(b"%d %d" % (num, len(body)))
        body += obj + b"\n"
    header = b" ".join(pairs) + b"\n"
    stream = zlib.compress(header + body, 9)

    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = {}
    offsets[4] = len(out)
    out += b"4 0 obj\n<< /Length %d >>\nstream\n" % len(CONTENT) + CONTENT + b"endstream\nendobj\n"
    offsets[5] = len(out)
    out += (
        b"5 0 obj\n<< /Type /ObjStm /N %d /First %d /Filter /FlateDecode /Length %d >>\nstream\n"
        % (len(packed), len(header), len(stream))
        + stream
        + b"\nendstream\nendobj\n"
    )
    offsets[6] = len(out)
    rows = bytearray(b"\x00\x00\x00\x00\x00\xff\xff")  # object 0: free
    for index, _ in enumerate(packed):  # objects 1-3: in stream 5
        rows += b"\x02" + (5).to_bytes(4, "big") + index.to_bytes(2, "big")
    for num in (4, 5, 6):
        rows += b"\x01" + offsets[num].to_bytes(4, "big") + b"\x00\x00"
    xref = zlib.compress(bytes(rows), 9)
    out += (
        b"6 0 obj\n<< /Type /XRef /Size 7 /W [1 4 2] /Root 1 0 R /Filter /FlateDecode "
        b"/Length %d >>\nstream\n" % len(xref)
        + xref
        + b"\nendstream\nendobj\n"
    )
    out += b"startxref\n%d\n%%%%EOF\n" % offsets[6]
    return bytes(out)


def plain_pdf(depth: int) -> bytes:
    """A classic PDF (xref table) whose catalog carries `/Junk` nested `depth` deep."""
    return classic_pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R /Junk " + nested(depth) + b" >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            PAGE,
            b"<< /Length %d >>\nstream\n" % len(CONTENT) + CONTENT + b"endstream",
        ]
    )


def classic_pdf(objects: list[bytes]) -> bytes:
    """A PDF with a cross-reference table of `objects`, numbered from 1 (1 is the catalog)."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for num, obj in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % num + obj + b"\nendobj\n"
    start = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        start,
    )
    return bytes(out)


def content_pdf(depth: int) -> bytes:
    """A classic PDF whose (compressed) page content shows an array nested `depth` deep."""
    content = zlib.compress(b"BT /F1 24 Tf 72 700 Td " + nested(depth) + b" TJ ET\n", 9)
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        PAGE,
        b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(content) + content + b"\nendstream",
    ]
    return classic_pdf(objects)


def many_attributes_html(count: int = 200_000) -> bytes:
    attrs = " ".join(f'a{i}=""' for i in range(count))
    return (
        "<!DOCTYPE html>\n<html><head><title>Many attributes</title></head><body>\n"
        f"<p {attrs}>One tag, {count} attributes.</p>\n</body></html>\n"
    ).encode()


def bomb_docx(path: str, mib: int) -> None:
    """A docx whose word/document.xml inflates to `mib` MiB of paragraphs of text runs,
    written in pieces (the part is never held in memory here)."""
    content_types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" '
        'ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
    )
    head = (
        b'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
        b'<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        b"<w:body>"
    )
    tail = b"</w:body></w:document>"
    run = b"<w:p><w:r><w:t>" + b"a" * 65_000 + b"</w:t></w:r></w:p>"
    block = run * 16  # about 1 MiB
    total = mib * (1 << 20)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
        z.writestr("[Content_Types].xml", content_types)
        z.writestr("_rels/.rels", rels)
        with z.open("word/document.xml", "w", force_zip64=True) as part:
            part.write(head)
            written = len(head) + len(tail)
            while written + len(block) <= total:
                part.write(block)
                written += len(block)
            while written + len(run) <= total:
                part.write(run)
                written += len(run)
            part.write(tail)


def yaml_bomb_md() -> bytes:
    l0 = ", ".join(["x"] * 20_000)
    aliases = lambda name: ", ".join([f"*{name}"] * 10)  # noqa: E731
    return (
        "---\n"
        f"l0: &l0 [{l0}]\n"
        f"l1: &l1 [{aliases('l0')}]\n"
        f"l2: &l2 [{aliases('l1')}]\n"
        f"l3: [{aliases('l2')}]\n"
        "---\n# A billion laughs\n\nThe front matter above expands to 2x10^7 values.\n"
    ).encode()


def deep_flow_md(depth: int = 100_000) -> bytes:
    return (
        "---\n"
        f"deep: {'[' * depth}{']' * depth}\n"
        "---\n# Deep flow\n\nThe front matter above nests flow sequences 100,000 deep.\n"
    ).encode()


def far_ttl_md() -> bytes:
    return (
        "---\ntitle: Far future\nttl: 10000000d\n---\n# Far future\n\n"
        "This document asks to expire in ten million days.\n"
    ).encode()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="folder to write into")
    parser.add_argument("--only", help="comma-separated names of the files to write")
    parser.add_argument("--docx-mib", type=int, default=400)
    parser.add_argument("--depth", type=int, default=1_000_000)
    args = parser.parse_args()
    wanted = NAMES if not args.only else tuple(n.strip() for n in args.only.split(","))
    unknown = [n for n in wanted if n not in NAMES]
    if unknown:
        parser.error(f"unknown names {unknown}; known: {', '.join(NAMES)}")
    os.makedirs(args.out, exist_ok=True)
    writers = {
        "deep-objstm.pdf": lambda: objstm_pdf(args.depth),
        "deep-array.pdf": lambda: plain_pdf(args.depth),
        "deep-content.pdf": lambda: content_pdf(args.depth),
        "many-attributes.html": many_attributes_html,
        "yaml-bomb.md": yaml_bomb_md,
        "deep-flow.md": deep_flow_md,
        "far-ttl.md": far_ttl_md,
    }
    for name in wanted:
        path = os.path.join(args.out, name)
        if name == "bomb.docx":
            bomb_docx(path, args.docx_mib)
        else:
            with open(path, "wb") as f:
                f.write(writers[name]())
        print(f"{path}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
