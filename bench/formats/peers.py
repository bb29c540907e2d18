#!/usr/bin/env python3
"""Extract every PDF under a folder with a peer tool, one file after the other on one
thread, printing the same JSON lines as zhiku's `extract_dir` example:

    peers.py pypdf|pdfminer DIR

  {"file": ..., "pages": N, "ms": ..., "text_per_page": [...]}   or  {"file": ..., "error": ...}
  {"summary": true, "files", "errors", "pages", "wall_s", "pages_per_s", "peak_rss_kb"}

pypdf:    PdfReader(path).pages[i].extract_text()
pdfminer: pdfminer.high_level.extract_pages(path) with default LAParams; a page's text is
          the concatenated get_text() of its text containers (what extract_text does).
"""

import json
import os
import resource
import sys
import time


def pypdf_pages(path):
    from pypdf import PdfReader

    reader = PdfReader(path)
    return [page.extract_text() or "" for page in reader.pages]


def pdfminer_pages(path):
    from pdfminer.high_level import extract_pages
    from pdfminer.layout import LTTextContainer

    out = []
    for layout in extract_pages(path):
        out.append("".join(el.get_text() for el in layout if isinstance(el, LTTextContainer)))
    return out


def main():
    tool, root = sys.argv[1], sys.argv[2]
    fn = {"pypdf": pypdf_pages, "pdfminer": pdfminer_pages}[tool]
    files = []
    for d, dirs, names in os.walk(root):
        dirs.sort()
        files += [os.path.join(d, n) for n in sorted(names) if n.lower().endswith(".pdf")]
    # import outside the timed loop, as zhiku's binary is loaded before its clock starts
    fn.__globals__  # noqa: B018
    if tool == "pypdf":
        import pypdf  # noqa: F401
    else:
        import pdfminer.high_level  # noqa: F401
    start = time.perf_counter()
    pages_total = errors = 0
    out = sys.stdout
    for path in files:
        rel = os.path.relpath(path, root)
        t = time.perf_counter()
        try:
            pages = fn(path)
            ms = (time.perf_counter() - t) * 1000
            pages_total += len(pages)
            line = {"file": rel, "pages": len(pages), "ms": round(ms, 2), "text_per_page": pages}
        except Exception as e:  # a peer's failure on one file is that file's error
            errors += 1
            line = {"file": rel, "ms": (time.perf_counter() - t) * 1000, "error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    wall = time.perf_counter() - start
    out.write(json.dumps({
        "summary": True,
        "files": len(files),
        "errors": errors,
        "pages": pages_total,
        "wall_s": round(wall, 3),
        "pages_per_s": round(pages_total / wall, 1) if wall > 0 else 0.0,
        "peak_rss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
    }) + "\n")


if __name__ == "__main__":
    main()
