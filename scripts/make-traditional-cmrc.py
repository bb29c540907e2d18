#!/usr/bin/env python3
"""Convert the CMRC 2018 dev set (BEIR layout) into Traditional Chinese with OpenCC.

    python make-traditional-cmrc.py SRC DEST [--config s2twp]

SRC is a BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv, optional spans.jsonl);
DEST is written anew (corpus, queries and spans converted, qrels copied, a README and
a .conversion.json describing the run).

Answer spans are character offsets into a passage's `text`. A phrase config such as s2twp
(Taiwan standard with Taiwan phrases: 软件 -> 軟體, 出租车 -> 計程車) may change a text's
length, so a passage is not converted in one piece: it is cut at every span boundary of every
question about it, each piece is converted alone, and the pieces are joined again. Each span
is then exactly one run of whole pieces, and its new offsets are the lengths of the converted
pieces before it. The price is that a phrase straddling a span boundary is converted
character by character instead of as a phrase; the run counts the boundaries where that
could have happened (the converted whole text differs from the joined pieces).
Titles and questions are converted whole.
"""

import argparse
import json
import shutil
import sys
from pathlib import Path

import opencc


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def convert_cut(conv, text, cuts):
    """Convert `text` piecewise, cut at the character offsets `cuts`. Returns the converted
    text and a map from each cut offset to its offset in the converted text."""
    points = sorted({0, len(text), *(c for c in cuts if 0 <= c <= len(text))})
    out, where, length = [], {0: 0}, 0
    for a, b in zip(points, points[1:]):
        piece = conv.convert(text[a:b])
        out.append(piece)
        length += len(piece)
        where[b] = length
    return "".join(out), where


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("src")
    ap.add_argument("dest")
    ap.add_argument("--config", default="s2twp",
                    help="OpenCC config: s2twp (default: Taiwan, with phrases), s2tw, s2t, s2hk")
    args = ap.parse_args(argv)

    src, dest = Path(args.src), Path(args.dest)
    conv = opencc.OpenCC(args.config)

    spans = read_jsonl(src / "spans.jsonl") if (src / "spans.jsonl").exists() else []
    cuts = {}
    for s in spans:
        cuts.setdefault(s["doc_id"], set()).update((s["start"], s["end"]))

    if dest.exists():
        shutil.rmtree(dest)
    (dest / "qrels").mkdir(parents=True)

    corpus, offsets = [], {}
    changed_length = straddled = 0
    for row in read_jsonl(src / "corpus.jsonl"):
        text = row.get("text") or ""
        new_text, where = convert_cut(conv, text, cuts.get(row["_id"], ()))
        offsets[row["_id"]] = where
        changed_length += len(new_text) != len(text)
        straddled += new_text != conv.convert(text)
        corpus.append({**row, "title": conv.convert(row.get("title") or ""), "text": new_text})
    write_jsonl(dest / "corpus.jsonl", corpus)

    queries = [{**q, "text": conv.convert(q["text"])} for q in read_jsonl(src / "queries.jsonl")]
    write_jsonl(dest / "queries.jsonl", queries)

    texts = {row["_id"]: row["text"] for row in corpus}
    new_spans = []
    for s in spans:
        where = offsets[s["doc_id"]]
        start, end = where[s["start"]], where[s["end"]]
        new_spans.append({**s, "start": start, "end": end,
                          "answer": texts[s["doc_id"]][start:end]})
    if spans:
        write_jsonl(dest / "spans.jsonl", new_spans)

    shutil.copyfile(src / "qrels" / "test.tsv", dest / "qrels" / "test.tsv")
    for extra in ("LICENCE",):
        if (src / extra).exists():
            shutil.copyfile(src / extra, dest / extra)

    summary = {
        "source": str(src.resolve()),
        "opencc": getattr(opencc, "__version__", "unknown"),
        "config": args.config,
        "passages": len(corpus),
        "passages_whose_length_changed": changed_length,
        "passages_where_a_span_cut_changed_the_conversion": straddled,
        "queries": len(queries),
        "spans": len(new_spans),
    }
    (dest / ".conversion.json").write_text(json.dumps(summary, ensure_ascii=False, indent=1) + "\n",
                                           encoding="utf-8")
    (dest / "README.md").write_text(
        "# CMRC 2018 dev in Traditional Chinese (generated)\n\n"
        f"Made by zhiku's scripts/make-traditional-cmrc.sh with OpenCC config `{args.config}` "
        "from the Simplified BEIR folder; same ids, same qrels, spans re-aligned to the converted "
        "text. Derived from CMRC 2018 (CC BY-SA 4.0, see LICENCE): do not commit it.\n",
        encoding="utf-8")
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
