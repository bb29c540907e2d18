#!/usr/bin/env python3
"""Writes the CMRC 2018 dev passages (../shared/datasets/cmrc2018-dev, CC BY-SA 4.0) as a
knowledge-base folder, one Markdown file per passage with its passage ID as the document ID,
for the conversation set evals/cmrc-conversations.jsonl (issue 41). The passages are read from
../shared and never copied into the repository.

    python3 scripts/make-cmrc-kb.py OUT_DIR [--corpus ../shared/datasets/cmrc2018-dev/corpus.jsonl]
"""

import argparse
import json
from pathlib import Path


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    here = Path(__file__).resolve().parent.parent
    ap.add_argument("--corpus", default=str(here.parent / "shared/datasets/cmrc2018-dev/corpus.jsonl"))
    a = ap.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(a.corpus, encoding="utf-8") as f:
        for line in f:
            p = json.loads(line)
            title = p["title"].replace("\n", " ").strip()
            body = p["text"].strip()
            front = json.dumps({"id": p["_id"], "title": title}, ensure_ascii=False)
            (out / f"{p['_id']}.md").write_text(f"---\n{front}\n---\n# {title}\n\n{body}\n", encoding="utf-8")
            n += 1
    print(f"{n} passages written to {out}")


if __name__ == "__main__":
    main()
