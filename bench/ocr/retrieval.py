#!/usr/bin/env python3
"""Retrieval through zhiku over the scans against the same pages as text (issue 38).

The OCR bench's fixtures hold every page twice: `scan/<condition>.pdf` (pictures only, read by
zhiku's OCR when indexed) and `text/<condition>.pdf` (the same lines as a text layer). This
indexes each set into its own knowledge base with the `zhiku` binary given, asks every question
of `questions.jsonl` with `zhiku search --json` (once per route: lexical, and hybrid when an
embeddings server is given), and scores, per condition and overall:

- hit@1 / hit@5: a hit among the first 1 / 5 is of the question's file and covers its page
  (a chunk's page range);
- answer@1: the answer (NFKC, whitespace removed) is in the first hit's text;
- the gap: text minus scans, the retrieval OCR costs.

Python standard library only. Prints a Markdown table; `--json` also writes every figure.

    PY=$(bash bench/ocr/setup.sh | tail -1)
    $PY bench/ocr/make_fixtures.py /tmp/zhiku-ocr/fixtures --pages 4
    cargo build --release -p zhiku
    python3 bench/ocr/retrieval.py /tmp/zhiku-ocr/fixtures --bin $CARGO_TARGET_DIR/release/zhiku \\
        --work /tmp/zhiku-ocr/retrieval [--embed-url $(bash scripts/embed-server.sh start | tail -1)]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from pathlib import Path


def norm(text: str) -> str:
    return "".join(unicodedata.normalize("NFKC", text).split())


def run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, env=env, capture_output=True, text=True)


def index(bin_: str, kb: Path, env: dict[str, str]) -> tuple[float, dict]:
    t = time.perf_counter()
    p = run([bin_, "--kb", str(kb), "index", "--json"], env)
    seconds = time.perf_counter() - t
    try:
        report = json.loads(p.stdout)
    except json.JSONDecodeError:
        sys.exit(f"zhiku index over {kb} failed ({p.returncode}):\n{p.stderr[-2000:]}")
    return seconds, report


def covers(hit: dict, page: int) -> bool:
    pages = hit.get("pages") or []
    return len(pages) == 2 and pages[0] <= page <= pages[1]


def score(bin_: str, kb: Path, questions: list[dict], side: str, mode: str,
          env: dict[str, str]) -> list[dict]:
    rows = []
    for q in questions:
        where = q[side]
        doc = Path(where["file"]).name
        p = run([bin_, "--kb", str(kb), "search", "--json", "--no-refresh", "--mode", mode,
                 "-k", "5", q["question"]], env)
        try:
            hits = json.loads(p.stdout)["evidence"]
        except (json.JSONDecodeError, KeyError):
            sys.exit(f"zhiku search failed ({p.returncode}): {p.stderr[-2000:]}")
        right = [h.get("doc_id") == doc and covers(h, where["page"]) for h in hits]
        rows.append({
            "id": q["id"],
            "condition": q["condition"],
            "hit1": bool(right[:1] and right[0]),
            "hit5": any(right),
            "answer1": bool(hits) and norm(q["answer"]) in norm(hits[0].get("content", "")),
        })
    return rows


def rates(rows: list[dict]) -> tuple[float, float, float]:
    n = len(rows) or 1
    return (sum(r["hit1"] for r in rows) / n, sum(r["hit5"] for r in rows) / n,
            sum(r["answer1"] for r in rows) / n)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("fixtures", type=Path)
    p.add_argument("--bin", required=True, help="the zhiku binary")
    p.add_argument("--work", type=Path, required=True, help="where the knowledge bases go")
    p.add_argument("--embed-url", help="an OpenAI-compatible embeddings server for hybrid "
                   "(scripts/embed-server.sh); without it only the lexical route is scored")
    p.add_argument("--json", type=Path, help="also write every figure here")
    args = p.parse_args()

    questions = [json.loads(line) for line in
                 (args.fixtures / "questions.jsonl").read_text(encoding="utf-8").splitlines()
                 if line.strip()]
    env = dict(os.environ)
    if args.embed_url:
        env.update({"ZHIKU_EMBEDDER": "openai", "ZHIKU_EMBED_URL": args.embed_url})
        modes = ["lexical", "hybrid"]
    else:
        env["ZHIKU_EMBEDDER"] = "hashing"
        modes = ["lexical"]
    load = lambda: " ".join(Path("/proc/loadavg").read_text().split()[:3])
    print(f"{len(questions)} questions; load {load()}", flush=True)

    results: dict = {"questions": len(questions), "modes": modes, "sides": {}}
    for side in ["scan", "text"]:
        kb = args.work / side
        if kb.exists():
            shutil.rmtree(kb)
        kb.mkdir(parents=True)
        for pdf in sorted((args.fixtures / side).glob("*.pdf")):
            shutil.copy(pdf, kb / pdf.name)
        seconds, report = index(args.bin, kb, env)
        print(f"{side}: indexed in {seconds:.1f} s: {report.get('docs_added')} documents, "
              f"{len(report.get('skipped') or [])} skipped; load {load()}", flush=True)
        side_out = {"index_s": seconds, "skipped": report.get("skipped") or []}
        for mode in modes:
            side_out[mode] = score(args.bin, kb, questions, side, mode, env)
        results["sides"][side] = side_out

    conditions = sorted({q["condition"] for q in questions})
    for mode in modes:
        print(f"\n{mode}: hit@1 / hit@5 / answer@1 (%), scans against the same pages as text\n")
        print("| condition | questions | scans | text | hit@1 gap |")
        print("|---|---:|---:|---:|---:|")
        for cond in conditions + ["all"]:
            pick = lambda rows: [r for r in rows if cond == "all" or r["condition"] == cond]
            s = rates(pick(results["sides"]["scan"][mode]))
            t = rates(pick(results["sides"]["text"][mode]))
            n = len(pick(results["sides"]["scan"][mode]))
            fmt = lambda r: " / ".join(f"{100 * v:.1f}" for v in r)
            name = f"**{cond}**" if cond == "all" else cond
            print(f"| {name} | {n} | {fmt(s)} | {fmt(t)} | {100 * (t[0] - s[0]):+.1f} |")
    print(f"\nload {load()}")
    if args.json:
        args.json.write_text(json.dumps(results, ensure_ascii=False, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
