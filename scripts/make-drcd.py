#!/usr/bin/env python3
"""Convert a DRCD split into a native Traditional Chinese retrieval set in the BEIR layout.

    python3 scripts/make-drcd.py DRCD_dev.json OUT_DIR [--split NAME]

Source: DRCD, the Delta Reading Comprehension Dataset (Shao et al., 2018,
https://github.com/DRCKnowledgeTeam/DRCD), a SQuAD-style span-extraction set over Traditional
Chinese Wikipedia, licensed CC BY-SA 3.0. Only the train and dev files (DRCD_training.json,
DRCD_dev.json) are meant to be read; the test split (DRCD_test.json) is never used, and the
script refuses a file or split name containing "test".

OUT_DIR gets the same files as ../shared/datasets/cmrc2018-dev:

- corpus.jsonl   one passage per paragraph, {"_id", "title", "text"}; _id is
                 DRCD_<SPLIT>_<n> (n = paragraph number in file order), title the article title
- queries.jsonl  one query per answered question, {"_id", "text"}; _id is
                 DRCD_<SPLIT>_<n>_QUERY_<m> (m = the question's position in its paragraph)
- qrels/test.tsv header `query-id<TAB>corpus-id<TAB>score`, then one row per query linking it
                 to its paragraph with score 1
- spans.jsonl    {"query_id", "doc_id", "start", "end", "answer"}: the gold answer (the one
                 with answer id "1", the annotator's; else the first) as character offsets
                 (Unicode scalar values, end exclusive) into the passage text. A span is kept
                 only if text[start:end] == answer; the others are counted and dropped (their
                 query and qrel are kept).
- README.md      provenance, licence and counts

Questions with no non-empty answer are skipped. Output order is file order, so a run is
deterministic. Uses the Python standard library only.
"""

import argparse
import json
import sys
from pathlib import Path


def write_jsonl(path, rows):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def default_split(path):
    name = Path(path).name.lower()
    if "train" in name:
        return "train"
    if "dev" in name:
        return "dev"
    return None


def gold_answer(answers):
    """The annotator's answer (id "1") if there is one with text, else the first with text."""
    usable = [a for a in answers if isinstance(a.get("text"), str) and a["text"]]
    for a in usable:
        if str(a.get("id")) == "1":
            return a
    return usable[0] if usable else None


def convert(data, prefix):
    corpus, queries, qrels, spans = [], [], [], []
    stats = {"articles": 0, "skipped_no_answer": 0, "mismatches": 0, "mismatch_examples": []}
    n = 0
    for article in data["data"]:
        stats["articles"] += 1
        title = article.get("title", "")
        for para in article.get("paragraphs", []):
            doc_id = f"{prefix}_{n}"
            n += 1
            text = para["context"]
            corpus.append({"_id": doc_id, "title": title, "text": text})
            for m, qa in enumerate(para.get("qas", [])):
                ans = gold_answer(qa.get("answers") or [])
                if ans is None:
                    stats["skipped_no_answer"] += 1
                    continue
                qid = f"{doc_id}_QUERY_{m}"
                queries.append({"_id": qid, "text": qa["question"]})
                qrels.append((qid, doc_id, 1))
                start = ans.get("answer_start")
                answer = ans["text"]
                end = start + len(answer) if isinstance(start, int) else None
                if end is not None and start >= 0 and text[start:end] == answer:
                    spans.append({"query_id": qid, "doc_id": doc_id, "start": start,
                                  "end": end, "answer": answer})
                else:
                    stats["mismatches"] += 1
                    if len(stats["mismatch_examples"]) < 5:
                        stats["mismatch_examples"].append((qa.get("id"), answer, start))
    return corpus, queries, qrels, spans, stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src", help="DRCD_dev.json or DRCD_training.json (never the test file)")
    ap.add_argument("out", help="output folder (files in it are overwritten)")
    ap.add_argument("--split", help="split name used in IDs (default: from the file name)")
    a = ap.parse_args()

    split = a.split or default_split(a.src)
    if not split:
        sys.exit("cannot tell the split from the file name; pass --split train|dev")
    if "test" in split.lower() or "test" in Path(a.src).name.lower():
        sys.exit("refusing: the DRCD test split is never used")
    prefix = f"DRCD_{split.upper()}"

    with open(a.src, encoding="utf-8") as f:
        data = json.load(f)
    corpus, queries, qrels, spans, st = convert(data, prefix)

    out = Path(a.out)
    (out / "qrels").mkdir(parents=True, exist_ok=True)
    write_jsonl(out / "corpus.jsonl", corpus)
    write_jsonl(out / "queries.jsonl", queries)
    with open(out / "qrels" / "test.tsv", "w", encoding="utf-8", newline="\n") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for qid, did, score in qrels:
            f.write(f"{qid}\t{did}\t{score}\n")
    write_jsonl(out / "spans.jsonl", spans)

    lens = sorted(len(p["text"]) for p in corpus) or [0]
    readme = f"""# DRCD {split} split as a Traditional Chinese retrieval benchmark

Source: DRCD, the Delta Reading Comprehension Dataset (Shao et al., 2018,
https://github.com/DRCKnowledgeTeam/DRCD), file `{Path(a.src).name}` (version
{data.get('version', '?')}); licensed CC BY-SA 3.0
(https://creativecommons.org/licenses/by-sa/3.0/), and so is this derived set.
Made by `scripts/make-drcd.py`; the DRCD test split is never used.

- `corpus.jsonl` — {len(corpus)} passages (one per paragraph, {st['articles']} articles), `{{"_id", "title", "text"}}`
- `queries.jsonl` — {len(queries)} questions, `{{"_id", "text"}}`
- `qrels/test.tsv` — header line, then `query-id<TAB>corpus-id<TAB>score`; one relevant passage per question
- `spans.jsonl` — {len(spans)} rows `{{"query_id", "doc_id", "start", "end", "answer"}}`: the gold answer
  (answer id "1") as character offsets (Unicode scalar values, end exclusive) into the passage `text`
  ({st['mismatches']} dropped because the offsets did not match the answer text).

Passages are {lens[0]}–{lens[-1]} characters (median {lens[len(lens) // 2]}), Traditional Chinese Wikipedia.
"""
    (out / "README.md").write_text(readme, encoding="utf-8")

    print(f"split:      {split} (ids {prefix}_*) from {a.src}")
    print(f"articles:   {st['articles']}")
    print(f"passages:   {len(corpus)}")
    print(f"queries:    {len(queries)}")
    print(f"qrels:      {len(qrels)}")
    print(f"spans:      {len(spans)}")
    print(f"mismatches: {st['mismatches']} (spans dropped)")
    for ex in st["mismatch_examples"]:
        print(f"  mismatch: qa {ex[0]} answer {ex[1]!r} start {ex[2]}")
    print(f"skipped (no answer): {st['skipped_no_answer']}")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
