#!/usr/bin/env python3
"""Score OCR engine outputs against the fixtures' truth; write a Markdown report.

Usage: score.py FIXTURES_DIR OUTPUT.jsonl [OUTPUT.jsonl ...] [--md REPORT.md] [--json PAGES.json]
                [--engines zhiku,rapidocr,tesseract] [--no-retrieval]

Input: one or more engine-output JSONL files, one record a page:
  {"engine": "name", "file": "images/clean/p001.png" | "scan/clean.pdf" | "mixed/clean.pdf" | ...,
   "page": 1, "size": [w, h]?, "seconds": 1.23,
   "lines": [{"text": "...", "box": [x0, y0, x1, y1], "confidence": 0.98, "words"?: [...]}]}
  file/page is any place truth.jsonl lists the page at (image, scan_pdf, text_pdf, mixed_pdf);
  "engine" defaults to the file's stem. Boxes are pixels of the image the engine read
  (size gives its width and height; for a PDF page, whatever raster the engine used).

Metrics
  CER         edit distance (Levenshtein over characters) / truth characters, after NFKC
              and removing all whitespace; the truth is the page's lines in reading order
              (header, title, body, table cells row by row, page number), the output is its
              lines in the engine's order, so reading-order mistakes count. Output lines that
              are part of an excluded text (the stamp) are dropped first. Per condition and
              per script the CER is pooled: total edits / total truth characters.
  bag error   1 - F1 of the character multisets: CER without reading order.
  table cells each truth cell is matched by row and column: truth cell boxes are shifted by
              the median offset of the header cells found in the output (header alignment),
              scaled to the output's size, each output line (or word, when given) goes to the
              cell holding its centre; a cell is right when its text equals the truth exactly
              (NFKC, no whitespace). Accuracy = right cells / all cells, header included.
  speed       pages / total seconds, and the median seconds a page.
  retrieval   (unless --no-retrieval) for each engine, BM25 over the OCR text of the pages it
              read (CJK character unigrams+bigrams, Latin words), each question of
              questions.jsonl asked: hit@1 = the top page is the question's page; answer rate
              = the answer (normalised) is in the top page's OCR text. The row "text layer"
              does the same over the truth text (what the text-layer PDFs hold).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import statistics
import sys
import unicodedata
from collections import Counter, defaultdict
from pathlib import Path

try:
    from rapidfuzz.distance import Levenshtein as _lev
    from rapidfuzz import fuzz as _fuzz

    def levenshtein(a: str, b: str) -> int:
        return _lev.distance(a, b)

    def similarity(a: str, b: str) -> float:
        return _fuzz.ratio(a, b) / 100
except ImportError:  # pure Python fallback
    def levenshtein(a: str, b: str) -> int:
        if len(a) < len(b):
            a, b = b, a
        prev = list(range(len(b) + 1))
        for i, ca in enumerate(a, 1):
            cur = [i]
            for j, cb in enumerate(b, 1):
                cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
            prev = cur
        return prev[-1]

    def similarity(a: str, b: str) -> float:
        if not a and not b:
            return 1.0
        return 1 - levenshtein(a, b) / max(len(a), len(b))

WS = re.compile(r"\s+", re.UNICODE)
ENGINE_ORDER = ["zhiku", "rapidocr", "tesseract"]


def norm(s: str) -> str:
    return WS.sub("", unicodedata.normalize("NFKC", s))


def bag_error(ref: str, hyp: str) -> float:
    if not ref and not hyp:
        return 0.0
    inter = sum((Counter(ref) & Counter(hyp)).values())
    return 1 - 2 * inter / (len(ref) + len(hyp))


def drop_excluded(lines, excluded, truth_text):
    """Drop output lines that are pieces of excluded text (stamp) and not of the truth."""
    ex = [norm(e.get("text", "")) + norm(e.get("center_text", "")) for e in excluded]
    if not ex:
        return lines
    keep = []
    for l in lines:
        t = norm(l["text"])
        if t and len(t) >= 2 and any(t in e for e in ex) and t not in truth_text:
            continue
        keep.append(l)
    return keep


def center(b):
    return ((b[0] + b[2]) / 2, (b[1] + b[3]) / 2)


def table_cells(page, rec):
    """Returns (right, total) for the page's table."""
    tab = page["table"]
    rows, boxes = tab["rows"], tab["cell_boxes"]
    total = sum(len(r) for r in rows)
    rw, rh = page["render"]["size"]
    sx, sy = 1.0, 1.0
    if rec.get("size"):
        sx, sy = rec["size"][0] / rw, rec["size"][1] / rh
    pieces = []
    for l in rec["lines"]:
        if l.get("words"):
            pieces.extend(l["words"])
        else:
            pieces.append(l)
    # header alignment: median offset between the header cells' text boxes in the truth and
    # the output lines that best match them
    text_box = {(l["row"], l["col"]): l["box"] for l in page["lines"] if l["kind"] == "table_cell"}
    dxs, dys = [], []
    for ci, h in enumerate(rows[0]):
        hn = norm(h)
        best, bs = None, 0.0
        for l in rec["lines"]:
            s = similarity(hn, norm(l["text"]))
            if s > bs:
                best, bs = l, s
        tl = text_box.get((0, ci))
        if best is not None and bs >= 0.6 and tl:
            tx, ty = center([tl[0] * sx, tl[1] * sy, tl[2] * sx, tl[3] * sy])
            ox, oy = center(best["box"])
            dxs.append(ox - tx)
            dys.append(oy - ty)
    dx = statistics.median(dxs) if dxs else 0.0
    dy = statistics.median(dys) if dys else 0.0
    got = defaultdict(list)
    for pc in pieces:
        cx, cy = center(pc["box"])
        for ri, brow in enumerate(boxes):
            for ci, b in enumerate(brow):
                x0, y0, x1, y1 = b[0] * sx + dx, b[1] * sy + dy, b[2] * sx + dx, b[3] * sy + dy
                if x0 <= cx < x1 and y0 <= cy < y1:
                    got[(ri, ci)].append((pc["box"][0], pc["text"]))
    right = 0
    for ri, row in enumerate(rows):
        for ci, cell in enumerate(row):
            txt = "".join(t for _, t in sorted(got.get((ri, ci), [])))
            right += norm(txt) == norm(cell)
    return right, total


TOK = re.compile(r"[a-z0-9]+|[^\sa-z0-9]")


def tokens(s: str):
    s = unicodedata.normalize("NFKC", s).lower()
    toks = TOK.findall(s)
    out = []
    for i, t in enumerate(toks):
        if t[0].isalnum() and t.isascii():
            out.append(t)
            continue
        if not t.isalnum():
            continue  # punctuation
        out.append(t)
        if i + 1 < len(toks) and toks[i + 1].isalnum() and not toks[i + 1].isascii():
            out.append(t + toks[i + 1])
    return out


def bm25_top(docs: dict, query: str):
    k1, b = 1.2, 0.75
    tf = {d: Counter(tokens(t)) for d, t in docs.items()}
    n = len(docs)
    avg = sum(sum(c.values()) for c in tf.values()) / max(1, n)
    df = Counter()
    for c in tf.values():
        df.update(c.keys())
    q = tokens(query)
    best, bs = None, -1.0
    for d, c in sorted(tf.items()):
        dl = sum(c.values())
        s = 0.0
        for t in q:
            if t in c:
                idf = math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5))
                s += idf * c[t] * (k1 + 1) / (c[t] + k1 * (1 - b + b * dl / avg))
        if s > bs:
            best, bs = d, s
    return best


def pct(x):
    return "—" if x is None else f"{100 * x:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fixtures")
    ap.add_argument("outputs", nargs="+")
    ap.add_argument("--md", help="write the Markdown report here (default stdout)")
    ap.add_argument("--json", help="write per-page scores here")
    ap.add_argument("--engines", default=",".join(ENGINE_ORDER),
                    help="engine columns, in order (missing ones show —); others are appended")
    ap.add_argument("--no-retrieval", action="store_true")
    args = ap.parse_args()
    fx = Path(args.fixtures)
    truth = [json.loads(l) for l in open(fx / "truth.jsonl", encoding="utf-8")]
    where = {}
    for p in truth:
        for k in ("image", "scan_pdf", "text_pdf", "mixed_pdf"):
            where[(p[k]["file"], p[k]["page"])] = p
    conds = list(dict.fromkeys(p["condition"] for p in truth))

    recs = defaultdict(dict)  # engine -> page id -> record
    unknown = 0
    for path in args.outputs:
        for l in open(path, encoding="utf-8"):
            if not l.strip():
                continue
            r = json.loads(l)
            eng = r.get("engine") or Path(path).stem
            p = where.get((r["file"], r["page"]))
            if p is None:
                unknown += 1
                continue
            recs[eng][p["id"]] = r
    if unknown:
        print(f"score: {unknown} output records name no fixture page", file=sys.stderr)
    engines = [e for e in args.engines.split(",") if e] + sorted(e for e in recs if e not in args.engines.split(","))

    per_page = []
    agg = defaultdict(lambda: [0, 0, 0.0, 0])  # (eng, key) -> edits, ref chars, bag sum, pages
    tables = defaultdict(lambda: [0, 0])
    speed = defaultdict(list)
    hyp_text = defaultdict(dict)
    for p in truth:
        ref = norm("".join(l["text"] for l in p["lines"]))
        for eng in engines:
            r = recs.get(eng, {}).get(p["id"])
            if r is None:
                continue
            lines = drop_excluded(r["lines"], p.get("excluded") or [], ref)
            hyp = norm("".join(l["text"] for l in lines))
            hyp_text[eng][p["id"]] = "".join(l["text"] for l in lines)
            ed = levenshtein(ref, hyp)
            be = bag_error(ref, hyp)
            row = dict(engine=eng, page_id=p["id"], condition=p["condition"], script=p["script"],
                       cer=ed / max(1, len(ref)), bag_error=be, ref_chars=len(ref), seconds=r.get("seconds"))
            for key in (("cond", p["condition"]), ("script", p["script"]), ("all", "all")):
                a = agg[(eng, key)]
                a[0] += ed
                a[1] += len(ref)
                a[2] += be
                a[3] += 1
            if p.get("table"):
                right, total = table_cells(p, r)
                tables[eng][0] += right
                tables[eng][1] += total
                row["table_cells"] = [right, total]
            if r.get("seconds") is not None:
                speed[eng].append(float(r["seconds"]))
            per_page.append(row)

    def cer(eng, key):
        a = agg.get((eng, key))
        return None if not a or not a[1] else a[0] / a[1]

    def bag(eng, key):
        a = agg.get((eng, key))
        return None if not a or not a[3] else a[2] / a[3]

    out = []
    out.append("CER % (lower is better), pooled over the condition's pages; in brackets the "
               "order-free bag-of-characters error %.\n")
    out.append("| condition | pages | " + " | ".join(engines) + " |")
    out.append("|---|---:|" + "---:|" * len(engines))
    for c in conds + ["all"]:
        key = ("cond", c) if c != "all" else ("all", "all")
        n = sum(1 for p in truth if c == "all" or p["condition"] == c)
        cells = [f"{pct(cer(e, key))} ({pct(bag(e, key))})" if cer(e, key) is not None else "—" for e in engines]
        out.append(f"| {'**all**' if c == 'all' else c} | {n} | " + " | ".join(cells) + " |")
    out.append("")
    out.append("CER % by script (all conditions):\n")
    out.append("| script | " + " | ".join(engines) + " |")
    out.append("|---|" + "---:|" * len(engines))
    for s in ("sc", "tc", "en"):
        out.append(f"| {s} | " + " | ".join(pct(cer(e, ('script', s))) for e in engines) + " |")
    out.append("")
    out.append("| engine | table cells right | pages | total s | pages/s | median s/page |")
    out.append("|---|---:|---:|---:|---:|---:|")
    for e in engines:
        t = tables.get(e)
        tc = f"{t[0]}/{t[1]} ({100 * t[0] / t[1]:.1f} %)" if t and t[1] else "—"
        sp = speed.get(e) or []
        if sp:
            out.append(f"| {e} | {tc} | {len(sp)} | {sum(sp):.1f} | {len(sp) / sum(sp):.3f} | {statistics.median(sp):.2f} |")
        else:
            out.append(f"| {e} | {tc} | — | — | — | — |")
    if not args.no_retrieval and (fx / "questions.jsonl").exists():
        qs = [json.loads(l) for l in open(fx / "questions.jsonl", encoding="utf-8")]
        truth_text = {p["id"]: "".join(l["text"] for l in p["lines"]) for p in truth}
        out.append("")
        out.append(f"Retrieval over the pages each engine read ({len(qs)} questions, BM25 over the "
                   "page text; answer rate = answer found in the top page's text):\n")
        out.append("| source | pages | questions | hit@1 % | answer rate % |")
        out.append("|---|---:|---:|---:|---:|")
        for name, docs in [("text layer (truth)", truth_text)] + [(e, hyp_text.get(e, {})) for e in engines]:
            asked = [q for q in qs if q["page_id"] in docs]
            if not asked:
                out.append(f"| {name} | — | — | — | — |")
                continue
            hit = ans = 0
            for q in asked:
                top = bm25_top(docs, q["question"])
                hit += top == q["page_id"]
                ans += top is not None and norm(q["answer"]) in norm(docs[top])
            out.append(f"| {name} | {len(docs)} | {len(asked)} | {100 * hit / len(asked):.1f} | "
                       f"{100 * ans / len(asked):.1f} |")
    md = "\n".join(out) + "\n"
    if args.md:
        Path(args.md).write_text(md, encoding="utf-8")
    else:
        sys.stdout.write(md)
    if args.json:
        Path(args.json).write_text(json.dumps(per_page, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
