#!/usr/bin/env python3
"""Python peer for zhiku's BM25 benchmark.

Builds a BM25 index over a BEIR-layout data set with one of the "stacks"
(a tokenizer + a Python BM25 library), runs every query one at a
time, and reports timings, peak memory and retrieval quality so the numbers
can be set beside zhiku's own.

    python bm25_peer.py --beir DIR --stack jieba_bm25s [--repeat-corpus N] [--half even] [--json]
    python bm25_peer.py --beir DIR --stack all --json   # every stack, one JSON line each

Stacks:
  jieba_bm25s           jieba.lcut + bm25s.BM25 (defaults: lucene, k1=1.5, b=0.75)
  jieba_rank_bm25       jieba.lcut + rank_bm25.BM25Okapi (defaults: k1=1.5, b=0.75)
  jieba_stop_rank_bm25  as above, also dropping a small Chinese stop list
  cjk_bigram_bm25s      no dictionary: overlapping CJK character bigrams (a lone CJK
                        character as itself), lower-cased letter/digit runs for other
                        scripts, + bm25s.BM25 (the usual script-neutral baseline)
  cjk_unibigram_bm25s   as above, also every CJK character as a unigram

Quality: hit@1, hit@5, hit@10, MRR@10 and nDCG@10 over the judged queries;
--half even|odd keeps the queries of even or odd position in queries.jsonl.

Install the dependencies with scripts/python-peers.sh.
"""

import argparse
import json
import logging
import math
import random
import resource
import sys
import time
import unicodedata
from pathlib import Path

import numpy as np

STACKS = (
    "jieba_bm25s",
    "jieba_rank_bm25",
    "jieba_stop_rank_bm25",
    "cjk_bigram_bm25s",
    "cjk_unibigram_bm25s",
)
DICTIONARY_FREE = ("cjk_bigram_bm25s", "cjk_unibigram_bm25s")
TOP_K = 10
SEED = 20240607  # fixed so --repeat-corpus perturbations are reproducible

# A short list of Chinese function words plus the question words that
# queries are full of but passages rarely contain.
STOP_WORDS = frozenset(
    """
    的 地 得 了 着 过 是 在 和 与 及 或 也 都 而 就 又 还 被 把 让 给 对 为
    从 向 于 以 之 其 所 这 那 这个 那个 这些 那些 一个 个 中 上 下 等 即 由
    将 并 但 且 则 因 因为 所以 如果 虽然 他 她 它 他们 她们 它们 我 我们 你
    有 没有 吗 呢 吧 啊 呀 么 什么 哪 哪个 哪些 哪里 哪儿 哪一 谁 多少 几 几个
    怎么 怎样 如何 为什么 为何 何 是否 请问
    """.split()
)


# --------------------------------------------------------------------------
# Data loading
# --------------------------------------------------------------------------

def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load_beir(root):
    """Return (doc_ids, doc_texts, queries, qrels) for a BEIR folder.

    queries is a list of (query_id, text); qrels maps query_id to the set of
    relevant corpus ids (score > 0).
    """
    root = Path(root)
    doc_ids, doc_texts = [], []
    for row in read_jsonl(root / "corpus.jsonl"):
        doc_ids.append(str(row["_id"]))
        doc_texts.append(f"{row.get('title') or ''}\n{row.get('text') or ''}")
    queries = [(str(r["_id"]), r["text"]) for r in read_jsonl(root / "queries.jsonl")]

    qrels = {}
    with open(root / "qrels" / "test.tsv", encoding="utf-8") as f:
        next(f)  # header line
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) < 3:
                continue
            qid, did, score = parts[0], parts[1], float(parts[2])
            if score > 0:
                qrels.setdefault(qid, set()).add(did)
    return doc_ids, doc_texts, queries, qrels


def repeat_corpus(doc_ids, doc_texts, n):
    """Grow the corpus n-fold. Copy 0 keeps the original id and text; copy
    i >= 1 is named "{id}__r{i}" and has one pseudo-random character removed,
    so the copies are not byte-identical."""
    if n <= 1:
        return doc_ids, doc_texts
    rng = random.Random(SEED)
    ids, texts = list(doc_ids), list(doc_texts)
    for i in range(1, n):
        for did, text in zip(doc_ids, doc_texts):
            ids.append(f"{did}__r{i}")
            if text:
                cut = rng.randrange(len(text))
                text = text[:cut] + text[cut + 1:]
            texts.append(text)
    return ids, texts


# --------------------------------------------------------------------------
# Tokenization
# --------------------------------------------------------------------------

def is_noise(token, keep_punct=False):
    """True when a token is only whitespace and/or punctuation (only
    whitespace when keep_punct is set)."""
    return all(
        ch.isspace() or (not keep_punct and unicodedata.category(ch).startswith("P"))
        for ch in token
    )


def make_tokenizer(jieba, use_stop_words, keep_punct=False):
    def tokenize(text):
        out = []
        for tok in jieba.lcut(text.lower()):
            if is_noise(tok, keep_punct):
                continue
            if use_stop_words and tok in STOP_WORDS:
                continue
            out.append(tok)
        return out

    return tokenize


def is_cjk(ch):
    """Han ideographs (with extensions and compatibility forms), kana and hangul."""
    cp = ord(ch)
    return (
        0x3400 <= cp <= 0x4DBF or 0x4E00 <= cp <= 0x9FFF or 0xF900 <= cp <= 0xFAFF
        or 0x20000 <= cp <= 0x3FFFF or 0x3040 <= cp <= 0x30FF or 0xAC00 <= cp <= 0xD7AF
    )


def make_cjk_tokenizer(with_unigrams):
    """Dictionary-free: CJK runs become overlapping bigrams (and unigrams when asked; a run
    of one character is always kept as itself), other letters and digits become lower-cased
    words, everything else separates."""

    def tokenize(text):
        out, word, run = [], [], []

        def flush_word():
            if word:
                out.append("".join(word))
                word.clear()

        def flush_run():
            if len(run) == 1:
                out.append(run[0])
            else:
                for i in range(len(run) - 1):
                    if with_unigrams:
                        out.append(run[i])
                    out.append(run[i] + run[i + 1])
                if with_unigrams and run:
                    out.append(run[-1])
            run.clear()

        for ch in text:
            if is_cjk(ch):
                flush_word()
                run.append(ch)
            elif ch.isalnum():
                flush_run()
                word.append(ch.lower())
            else:
                flush_word()
                flush_run()
        flush_word()
        flush_run()
        return out

    return tokenize


# --------------------------------------------------------------------------
# Retrievers: each exposes build(list_of_token_lists) and top10(tokens) ->
# document indices, best first.
# --------------------------------------------------------------------------

class Bm25sRetriever:
    def __init__(self):
        import bm25s

        self.bm25s = bm25s
        self.model = None

    def build(self, corpus_tokens):
        # bm25s 0.3.16 accepts a list of token lists (strings) directly and
        # builds the vocabulary itself; no need for bm25s.tokenization.
        self.model = self.bm25s.BM25()
        self.model.index(corpus_tokens, show_progress=False)

    def top10(self, tokens):
        # retrieve() takes a batch of queries; we send a batch of one.
        docs, _scores = self.model.retrieve([tokens], k=TOP_K, show_progress=False)
        return docs[0].tolist()


class RankBm25Retriever:
    def __init__(self):
        from rank_bm25 import BM25Okapi

        self.cls = BM25Okapi
        self.model = None

    def build(self, corpus_tokens):
        self.model = self.cls(corpus_tokens)

    def top10(self, tokens):
        scores = self.model.get_scores(tokens)
        k = min(TOP_K, len(scores))
        part = np.argpartition(-scores, k - 1)[:k]
        # Sort the k candidates by score, best first (stable on ties).
        return part[np.argsort(-scores[part], kind="stable")].tolist()


# --------------------------------------------------------------------------
# Metrics
# --------------------------------------------------------------------------

def quality(ranked_ids, relevant):
    """Binary-relevance metrics for one query's top-10 list."""
    first = None
    dcg = 0.0
    for rank, did in enumerate(ranked_ids[:TOP_K], start=1):
        if did in relevant:
            dcg += 1.0 / math.log2(rank + 1)
            if first is None:
                first = rank
    ideal = sum(1.0 / math.log2(r + 1) for r in range(1, min(len(relevant), TOP_K) + 1))
    return {
        "hit@1": float(first is not None and first <= 1),
        "hit@5": float(first is not None and first <= 5),
        "hit@10": float(first is not None),
        "mrr@10": 1.0 / first if first else 0.0,
        "ndcg@10": dcg / ideal if ideal else 0.0,
    }


def peak_rss_mib():
    # ru_maxrss is in KiB on Linux.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------

def run(args):
    doc_ids, doc_texts, queries, qrels = load_beir(args.beir)
    doc_ids, doc_texts = repeat_corpus(doc_ids, doc_texts, args.repeat_corpus)

    if args.half:
        parity = 0 if args.half == "even" else 1
        queries = [q for i, q in enumerate(queries) if i % 2 == parity]

    if args.stack in DICTIONARY_FREE:
        dict_load_s = 0.0
        tokenize = make_cjk_tokenizer(with_unigrams=args.stack == "cjk_unibigram_bm25s")
    else:
        import jieba

        jieba.setLogLevel(logging.WARNING)
        t0 = time.perf_counter()
        jieba.initialize()
        dict_load_s = time.perf_counter() - t0

        tokenize = make_tokenizer(
            jieba,
            use_stop_words=args.stack == "jieba_stop_rank_bm25",
            keep_punct=args.keep_punct,
        )
    uses_bm25s = args.stack.endswith("_bm25s")
    retriever = Bm25sRetriever() if uses_bm25s else RankBm25Retriever()

    # Build = tokenizing every document + building the index.
    t0 = time.perf_counter()
    corpus_tokens = [tokenize(t) for t in doc_texts]
    retriever.build(corpus_tokens)
    build_s = time.perf_counter() - t0
    del corpus_tokens

    # One untimed query so lazy imports / first-call costs don't land in p99.
    retriever.top10(tokenize(queries[0][1]) if queries else ["warmup"])

    latencies_ms = []
    sums = {"hit@1": 0.0, "hit@5": 0.0, "hit@10": 0.0, "mrr@10": 0.0, "ndcg@10": 0.0}
    judged = 0
    for qid, text in queries:
        t0 = time.perf_counter()
        top = retriever.top10(tokenize(text))
        latencies_ms.append((time.perf_counter() - t0) * 1000.0)

        relevant = qrels.get(qid)
        if not relevant:
            continue  # no judgements: timed, but not scored
        judged += 1
        for key, value in quality([doc_ids[i] for i in top], relevant).items():
            sums[key] += value

    lat = np.asarray(latencies_ms) if latencies_ms else np.zeros(1)
    result = {
        "stack": args.stack,
        "half": args.half or "all",
        "docs": len(doc_ids),
        "queries": len(queries),
        "dict_load_s": round(dict_load_s, 4),
        "build_s": round(build_s, 4),
        "query_p50_ms": round(float(np.percentile(lat, 50)), 4),
        "query_p99_ms": round(float(np.percentile(lat, 99)), 4),
        "peak_rss_mib": round(peak_rss_mib(), 1),
    }
    for key, total in sums.items():
        result[key] = round(total / judged, 4) if judged else 0.0
    return result


def print_table(result):
    width = max(len(k) for k in result)
    for key, value in result.items():
        print(f"{key:<{width}}  {value}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--beir", required=True, help="BEIR-layout data set folder")
    ap.add_argument("--stack", required=True, choices=STACKS + ("all",),
                    help="one stack, or all of them one after the other (one result each)")
    ap.add_argument("--repeat-corpus", type=int, default=1, metavar="N",
                    help="repeat each passage N times (perturbed copies) to grow the corpus")
    ap.add_argument("--keep-punct", action="store_true",
                    help="keep punctuation tokens (drop only whitespace ones)")
    ap.add_argument("--half", choices=("even", "odd"),
                    help="keep only the queries of even (0, 2, ...) or odd position")
    ap.add_argument("--json", action="store_true", help="print one JSON object on the last line")
    args = ap.parse_args(argv)
    if args.repeat_corpus < 1:
        ap.error("--repeat-corpus must be >= 1")

    for stack in STACKS if args.stack == "all" else (args.stack,):
        result = run(argparse.Namespace(**{**vars(args), "stack": stack}))
        if args.json:
            print(json.dumps(result, ensure_ascii=False), flush=True)
        else:
            print_table(result)
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
