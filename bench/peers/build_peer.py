#!/usr/bin/env python3
"""The full-build peer of zhiku's scale bench (issue 15): hnswlib build + jieba/bm25s index of the
same chunks and vectors that a `zhiku index` from scratch wrote.

    python build_peer.py STORE_DIR [--threads 2] [--json]

STORE_DIR is a store zhiku built (`<kb>/.zhiku`): its `vectors.sqlite` holds every chunk's
record (content and title) and f32 vector, so the peer indexes exactly what zhiku indexed,
without re-reading or re-chunking the folder (zhiku's figure includes that; the peer's does
not: it flatters the peer). Three phases, each timed on its own:

1. read: the rows from SQLite into a numpy matrix and a list of texts (reported, not counted
   in the peer's build);
2. hnswlib: `Index(space="cosine")`, M 16, ef_construction 200 (the store's graph settings),
   `add_items` on `--threads` threads;
3. bm25s: `jieba.lcut` of title + content of every chunk (lower-cased, whitespace and
   punctuation dropped, as zhiku's analyzer does), then `bm25s.BM25().index`.

Peak RSS of the process is reported at the end. The last line of stdout is one JSON object.
Set up with scripts/setup-bench-peers.sh (hnswlib, numpy) and scripts/python-peers.sh (jieba,
bm25s), or both into one venv.
"""

import argparse
import json
import resource
import sqlite3
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np


def is_noise(token):
    token = token.strip()
    return not token or all(unicodedata.category(c)[0] in "PZSC" for c in token)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("store", type=Path)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    db = sqlite3.connect(f"file:{args.store / 'vectors.sqlite'}?mode=ro", uri=True)
    space = json.loads(db.execute("SELECT value FROM meta WHERE name = 'space'").fetchone()[0])
    dims = int(space["dims"])
    started = time.perf_counter()
    rows = db.execute("SELECT record, vector FROM chunks ORDER BY key").fetchall()
    texts = []
    vectors = np.empty((len(rows), dims), dtype=np.float32)
    for i, (record, blob) in enumerate(rows):
        r = json.loads(record)
        texts.append(f"{r.get('title', '')}\n{r['content']}")
        vectors[i] = np.frombuffer(blob, dtype="<f4", count=dims)
    del rows
    read_s = time.perf_counter() - started

    import hnswlib

    started = time.perf_counter()
    index = hnswlib.Index(space="cosine", dim=dims)
    index.init_index(max_elements=len(texts), M=16, ef_construction=200)
    index.add_items(vectors, np.arange(len(texts)), num_threads=args.threads)
    hnsw_s = time.perf_counter() - started

    import bm25s
    import jieba

    jieba.setLogLevel(60)
    jieba.initialize()
    started = time.perf_counter()
    tokens = [[t for t in jieba.lcut(text.lower()) if not is_noise(t)] for text in texts]
    tokenize_s = time.perf_counter() - started
    started = time.perf_counter()
    bm25 = bm25s.BM25()
    bm25.index(tokens, show_progress=False)
    bm25_s = time.perf_counter() - started

    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {
        "chunks": len(texts),
        "dims": dims,
        "read_s": round(read_s, 2),
        "hnswlib_build_s": round(hnsw_s, 2),
        "jieba_tokenize_s": round(tokenize_s, 2),
        "bm25s_index_s": round(bm25_s, 2),
        "peer_build_s": round(hnsw_s + tokenize_s + bm25_s, 2),
        "peak_rss_mib": round(peak_mib),
        "threads": args.threads,
        "versions": {
            "hnswlib": getattr(hnswlib, "__version__", "?"),
            "bm25s": getattr(bm25s, "__version__", "?"),
            "jieba": getattr(jieba, "__version__", "?"),
        },
    }
    if not args.json:
        for key, value in result.items():
            print(f"{key}: {value}", file=sys.stderr)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
