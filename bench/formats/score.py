#!/usr/bin/env python3
"""Score extraction outputs against the corpus truth and print a Markdown report.

    score.py --truth TRUTH_DIR --out OUT_DIR TOOL=JSONL[:TIMEFILE] ...

The first TOOL is the reference for the speed ratio (zhiku). JSONL is what
extract_dir / peers.py printed; TIMEFILE is the `/usr/bin/time -v` report of that run.

Similarity of a page: normalized Levenshtein similarity (rapidfuzz) between the truth
and the tool's text of that page, both with all whitespace removed. zhiku's Markdown
heading markers ("# ", "## ") and its "\\" escape at a line start are removed first: they
are structure, not text. A page a tool does not return counts as empty.

"peer, no header/footer": the peer's lines whose whitespace-free text equals the running
header, or fully matches the document's footer pattern, are removed before scoring (the
truth has neither; zhiku drops them itself).
"""

import argparse
import json
import os
import re
import statistics

from rapidfuzz.distance import Levenshtein

WS = re.compile(r"\s+")
HEADING = re.compile(r"^\s{0,3}#{1,6}\s+", re.M)
ESCAPE = re.compile(r"^(\s{0,3})\\(?=[#`~])", re.M)


def squash(s):
    return WS.sub("", s)


def zhiku_text(s):
    return squash(ESCAPE.sub(r"\1", HEADING.sub("", s)))


def strip_edges(s, header, footer_re):
    h = squash(header)
    f = re.compile(footer_re)
    keep = []
    for line in s.splitlines():
        q = squash(line)
        if q == h or f.fullmatch(q):
            continue
        keep.append(line)
    return "\n".join(keep)


def fmt2(x):
    return "" if x is None else f"{x:.2f}"


def sim(a, b):
    if not a and not b:
        return 1.0
    return Levenshtein.normalized_similarity(a, b)


def load_jsonl(path):
    docs, summary = {}, None
    with open(path, encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            if d.get("summary"):
                summary = d
            else:
                docs[d["file"]] = d
    return docs, summary


def time_v(path):
    """(wall seconds, max RSS kB) from a /usr/bin/time -v report."""
    if not path or not os.path.exists(path):
        return None, None
    wall = rss = None
    for line in open(path, encoding="utf-8", errors="replace"):
        line = line.strip()
        if line.startswith("Elapsed (wall clock) time"):
            t = line.rsplit(" ", 1)[-1]
            parts = [float(p) for p in t.split(":")]
            wall = 0.0
            for p in parts:
                wall = wall * 60 + p
        elif line.startswith("Maximum resident set size"):
            rss = int(line.rsplit(" ", 1)[-1])
    return wall, rss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--worst", type=int, default=15)
    ap.add_argument("tools", nargs="+")
    args = ap.parse_args()

    truths = {}
    for name in sorted(os.listdir(args.truth)):
        if name.endswith(".json"):
            t = json.load(open(os.path.join(args.truth, name), encoding="utf-8"))
            truths[t["file"]] = t

    rows, page_scores = [], {}
    ref_rate = None
    for spec in args.tools:
        tool, rest = spec.split("=", 1)
        jsonl, _, timefile = rest.partition(":")
        docs, summary = load_jsonl(jsonl)
        wall_v, rss_v = time_v(timefile)
        is_zhiku = tool.startswith("zhiku")
        variants = [("", False)] if is_zhiku else [("", False), (", no header/footer", True)]
        for suffix, strip in variants:
            scores = []  # (file, page, lang, two_col, sim)
            for file, t in truths.items():
                d = docs.get(file, {})
                got = d.get("text_per_page") or []
                two = set(t["two_column_pages"])
                for i, truth_page in enumerate(t["pages"]):
                    text = got[i] if i < len(got) else ""
                    if strip:
                        text = strip_edges(text, t["header"], t["footer_re"])
                    a = zhiku_text(text) if is_zhiku else squash(text)
                    scores.append((file, i + 1, t["lang"], (i + 1) in two, sim(squash(truth_page), a),
                                   t.get("stream_order") == "shuffled"))
            page_scores[tool + suffix] = scores
            pages = summary["pages"] if summary else 0
            rate = summary["pages_per_s"] if summary else 0.0
            if ref_rate is None:
                ref_rate = rate

            def agg(sel):
                v = [s for s in scores if sel(s)]
                if not v:
                    return "–"
                m = statistics.fmean(x[4] for x in v)
                good = sum(x[4] >= 0.98 for x in v) / len(v)
                return f"{m:.4f} / {good:.1%}"

            rows.append({
                "tool": tool + suffix,
                "pages": pages,
                "errors": summary["errors"] if summary else "?",
                "extract_s": summary["wall_s"] if summary else None,
                "wall_s": wall_v,
                "rate": rate,
                "ratio": (rate / ref_rate) if ref_rate else None,
                "rss_mb": (rss_v or (summary or {}).get("peak_rss_kb") or 0) / 1024,
                "all": agg(lambda s: True),
                "zh": agg(lambda s: s[2] == "zh"),
                "en": agg(lambda s: s[2] == "en"),
                "two": agg(lambda s: s[3]),
                "one": agg(lambda s: not s[3]),
                "shuf": agg(lambda s: s[5]),
                "speed": not strip,
            })

    n_pages = sum(len(t["pages"]) for t in truths.values())
    n_zh = sum(len(t["pages"]) for t in truths.values() if t["lang"] == "zh")
    n_two = sum(len(t["two_column_pages"]) for t in truths.values())
    n_shuf = sum(len(t["pages"]) for t in truths.values() if t.get("stream_order") == "shuffled")
    lines = []
    lines.append(f"Corpus: {len(truths)} PDFs, {n_pages} pages ({n_zh} Chinese, {n_pages - n_zh} English; "
                 f"{n_two} two-column pages; {n_shuf} pages whose lines are drawn in shuffled order).")
    lines.append("")
    lines.append("| tool | pages | errors | extraction s | process wall s | pages/s | × zhiku speed | peak RSS MB |")
    lines.append("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        if not r["speed"]:
            continue
        lines.append(
            f"| {r['tool']} | {r['pages']} | {r['errors']} | {r['extract_s']:.2f} | "
            f"{fmt2(r['wall_s'])} | {r['rate']:.1f} | "
            f"{r['ratio']:.3f} | {r['rss_mb']:.1f} |"
        )
    lines.append("")
    lines.append("Quality: mean per-page similarity / share of pages with similarity ≥ 0.98.")
    lines.append("")
    lines.append("| tool | all pages | Chinese | English | two-column pages | one-column pages | shuffled-stream pages |")
    lines.append("|---|---|---|---|---|---|---|")
    for r in rows:
        lines.append(f"| {r['tool']} | {r['all']} | {r['zh']} | {r['en']} | {r['two']} | {r['one']} | {r['shuf']} |")
    lines.append("")
    if "zhiku" in page_scores:
        footer_of = {f: t["footer_re"] for f, t in truths.items()}
        lang_of = {f: t["lang"] for f, t in truths.items()}
        lines.append("zhiku by running-footer style (the footer pattern, whitespace removed):")
        lines.append("")
        lines.append("| lang | footer | pages | mean | ≥ 0.98 | two-column pages: mean |")
        lines.append("|---|---|---:|---:|---:|---:|")
        keys = sorted({(lang_of[f], footer_of[f]) for f in truths})
        for lang, fre in keys:
            v = [s for s in page_scores["zhiku"] if lang_of[s[0]] == lang and footer_of[s[0]] == fre]
            two = [s[4] for s in v if s[3]]
            lines.append(
                f"| {lang} | `{fre}` | {len(v)} | {statistics.fmean(x[4] for x in v):.4f} | "
                f"{sum(x[4] >= 0.98 for x in v) / len(v):.1%} | "
                f"{f'{statistics.fmean(two):.4f} ({len(two)})' if two else '–'} |")
        lines.append("")
    z = sorted(page_scores.get("zhiku", []), key=lambda s: s[4])
    if z:
        lines.append(f"Lowest-scoring zhiku pages (of {len(z)}; {sum(s[4] < 0.98 for s in z)} below 0.98):")
        lines.append("")
        lines.append("| file | page | lang | two-column | shuffled | zhiku | pypdf (no h/f) | pdfminer (no h/f) |")
        lines.append("|---|---:|---|---|---|---:|---:|---:|")
        other = {k: {(s[0], s[1]): s[4] for s in v} for k, v in page_scores.items()}
        for f, p, lang, two, s, shuf in z[: args.worst]:
            a = other.get("pypdf, no header/footer", {}).get((f, p))
            b = other.get("pdfminer, no header/footer", {}).get((f, p))
            lines.append(f"| {f} | {p} | {lang} | {'yes' if two else ''} | {'yes' if shuf else ''} | {s:.4f} | "
                         f"{'' if a is None else f'{a:.4f}'} | {'' if b is None else f'{b:.4f}'} |")
        lines.append("")
    report = "\n".join(lines)
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "scores.md"), "w", encoding="utf-8") as f:
        f.write(report + "\n")
    with open(os.path.join(args.out, "page_scores.json"), "w", encoding="utf-8") as f:
        json.dump({k: [list(s) for s in v] for k, v in page_scores.items()}, f)
    print(report)


if __name__ == "__main__":
    main()
