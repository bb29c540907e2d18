#!/usr/bin/env python3
"""Generates the scale corpus for zhiku's store benchmarks (issue 15).

Real Chinese sentences from the CMRC 2018 dev passages are recombined into distinct Markdown
documents with front matter (`id`, `scope` = scope-0..scope-9, `title`, usually `locale: zh-CN`,
and the metadata keys `team` and `year`). Each body has one or two headings and 2 to 6
paragraphs. The generator knows zhiku's default chunking policy (chunker v2, 480 characters,
64 of overlap) and counts the chunks of every document as the chunker will cut it, so
`--chunks N` writes a corpus of exactly N chunks (or `--docs N` writes N documents).

Files go into subfolders of at most 1,000 files (`part-0000/doc-0000000.md`, ...). A hidden
`.scale-corpus.json` in the output folder records the parameters and the counts (hidden files
are not indexed). `--queries FILE` writes a JSONL of questions drawn from the CMRC questions.

`--access` (opt-in) also gives documents readers in their front matter, for the per-person
access bench (`scripts/bench-scale.py --access`): about 30 % name none (open to their scope),
the others `access: [group:g3, user:u17@corp]` with 1 to 3 distinct readers, each a group
`group:g0`..`group:g19` (70 %) or a user `user:u0@corp`..`user:u49@corp` (30 %). The readers come
from their own random stream, so the documents, their chunks and every other key are the same
as without the flag; without it the output is byte-identical to a generator that has no such
flag. The summary then records the counts (`access`).

Python 3 standard library only; the output is a pure function of the arguments.

    python3 scripts/make-scale-corpus.py /tmp/scale-100k --chunks 100000 \
        --queries /tmp/scale-queries.jsonl
    python3 scripts/make-scale-corpus.py /tmp/scale-100k-access --chunks 100000 --access \
        --queries /tmp/scale-100k-access.queries.jsonl

The CMRC 2018 data is CC BY-SA 4.0; the generated corpora are derived data (same licence) and
are never committed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import sys
import time
import unicodedata
from pathlib import Path

# zhiku's default chunking policy: `ChunkingPolicy::default()` in crates/domain
# (DEFAULT_MAX_CHARS / DEFAULT_OVERLAP_CHARS). The counting below mirrors the chunker
# (crates/domain/src/chunker.rs, CHUNKER_VERSION 2) for the shapes this script writes (version
# 2 differs from 1 only on pipe tables, which this script never writes).
MAX_CHARS = 480
OVERLAP_CHARS = 64
CHUNKER_VERSION = 2

FILES_PER_FOLDER = 1000
SCOPES = [f"scope-{i}" for i in range(10)]
TEAMS = ["atlas", "bamboo", "cobalt", "delta", "ember", "fjord", "granite", "harbor"]
LABELS = ["概览", "札记", "摘录", "综述", "笔记", "资料", "问答", "备忘"]
SUBHEADINGS = ["背景", "概述", "历史", "细节", "影响", "相关内容", "补充", "评价", "其他"]
# `--access`: the share of documents with no readers (open to their scope), the groups and
# users readers are drawn from, and the chance that a reader is a group.
ACCESS_OPEN = 0.3
ACCESS_GROUPS = [f"group:g{i}" for i in range(20)]
ACCESS_USERS = [f"user:u{i}@corp" for i in range(50)]
ACCESS_GROUP_SHARE = 0.7

# A sentence: up to and including a run of Chinese terminators, plus any closing brackets
# or quotes after them. Text after the last terminator of a line is dropped (mostly lists of
# links and captions in the Wikipedia passages).
SENTENCE = re.compile(r"[^。！？；\n]*[。！？；]+[」』”’）)》]*")
# Characters after which the chunker may start an overlap (`is_soft_break` in the chunker):
# whitespace, sentence terminators, closing quotes/brackets and Chinese/Latin commas and colons.
SOFT_BREAK = re.compile(
    r"[\s。！？；…!?;\n．｡”’\"'」』）)\]】》〉，,、：:]"
)


def plain(text: str) -> bool:
    """True when every character is its own grapheme cluster and not a control character, so
    that character offsets here equal the chunker's (it cuts only on grapheme boundaries)."""
    for c in text:
        cat = unicodedata.category(c)
        if cat[0] in "MC" or cat == "Cn":
            return False
        o = ord(c)
        if 0x1100 <= o <= 0x11FF or 0x1F1E6 <= o <= 0x1F1FF or 0xAC00 <= o <= 0xD7A3:
            return False
    return True


def load_sentences(cmrc: Path):
    """Passages as (title, [sentences]) with usable sentences only."""
    passages = []
    with open(cmrc / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            title = " ".join(d["title"].split())
            if not title or not plain(title) or len(title) > 40:
                continue
            sentences = []
            for part in d["text"].split("\n"):
                for m in SENTENCE.finditer(part):
                    # One space for every run of whitespace: the chunker and Python agree on it.
                    s = " ".join(m.group().split())
                    if not 8 <= len(s) <= 240 or not plain(s):
                        continue
                    # A paragraph must not open as Markdown structure (heading, fence, ...).
                    if s[0] in "#`~>-*+|=":
                        continue
                    sentences.append(s)
            if len(sentences) >= 3:
                passages.append((title, sentences))
    if not passages:
        sys.exit(f"no usable passages in {cmrc / 'corpus.jsonl'}")
    return passages


def overlap_start(body: str, window_start: int, overlap: int) -> int:
    """The chunker's `overlap_start` for text whose characters are their own graphemes."""
    earliest = window_start - overlap
    if overlap == 0:
        return window_start
    # The earliest p in [earliest, window_start) with p > 0 and a soft break at p - 1.
    # Searching the characters p - 1 in [max(earliest - 1, 0), window_start - 1) gives it.
    m = SOFT_BREAK.search(body, max(earliest - 1, 0), window_start - 1)
    return earliest if m is None else m.start() + 1


def count_section(body: str, section_start: int, pieces, has_heading: bool) -> int:
    """The number of windows the chunker's `pack` makes of one section, when every piece is
    at most MAX_CHARS and the heading fits with the paragraph after it (the generator keeps
    both true, so neither sentence splitting nor the heading-only rule applies)."""
    n = 0
    i = 0
    previous_start = None
    while i < len(pieces):
        window_start, first_end = pieces[i]
        wanted = 0 if previous_start is None else min(OVERLAP_CHARS, window_start - previous_start)
        room = max(MAX_CHARS - (first_end - window_start), 0)
        chunk_start = overlap_start(body, window_start, min(wanted, room))
        i += 1
        while i < len(pieces) and pieces[i][1] - chunk_start <= MAX_CHARS:
            i += 1
        if has_heading and chunk_start == section_start and i == 1 and i < len(pieces):
            raise AssertionError("heading-only window: the generator broke its own rule")
        n += 1
        previous_start = window_start
    return n


class Generator:
    def __init__(self, passages, seed: int):
        self.passages = passages
        self.rng = random.Random(seed)
        self.seen = set()

    def pick(self, items):
        """A uniform choice (random.random is cheaper than Random.choice's rejection loop)."""
        return items[int(self.rng.random() * len(items))]

    def sentence_source(self, main):
        """Draws sentences: mostly from the main passage (each at most once), some from any
        other passage."""
        rng = self.rng
        own = main[1]
        used = set()

        def draw():
            if len(used) < len(own) and rng.random() < 0.7:
                while True:
                    k = int(rng.random() * len(own))
                    if k not in used:
                        used.add(k)
                        return own[k]
            return self.pick(self.pick(self.passages)[1])

        return draw

    def paragraph(self, draw, limit: int) -> str:
        """1 to 3 sentences, at most `limit` characters (at least one sentence fits)."""
        want = self.pick((1, 1, 1, 2, 2, 3))
        parts = []
        size = 0
        for _ in range(want * 3):
            if len(parts) == want:
                break
            s = draw()
            if size + len(s) <= limit:
                parts.append(s)
                size += len(s)
        if not parts:
            s = draw()
            parts.append(s[: max(limit, 8)] if len(s) > limit else s)
        return "".join(parts)

    def document(self):
        """Returns (title, body, chunks) for a new distinct document."""
        rng = self.rng
        while True:
            main = self.pick(self.passages)
            draw = self.sentence_source(main)
            title = f"{main[0]} · {self.pick(LABELS)}"
            paragraphs = self.pick((2, 2, 2, 3, 3, 4, 5, 6))
            two_sections = paragraphs >= 3 and rng.random() < 0.5
            split_at = 1 + int(rng.random() * (paragraphs - 1)) if two_sections else paragraphs
            blocks = []  # (kind, text): "h" a heading line, "p" a paragraph
            blocks.append(("h", f"# {title}"))
            for j in range(paragraphs):
                if j == split_at:
                    sub = self.pick(SUBHEADINGS + [self.pick(self.passages)[0]])
                    blocks.append(("h", f"## {sub}"))
                if blocks[-1][0] == "h":
                    # Heading unit ("<heading>\n\n") plus this paragraph ("<p>\n\n") must fit.
                    limit = MAX_CHARS - (len(blocks[-1][1]) + 2) - 2
                else:
                    limit = MAX_CHARS - 2
                blocks.append(("p", self.paragraph(draw, min(limit, 460))))
            body = "\n\n".join(text for _, text in blocks) + "\n"
            digest = hashlib.blake2b(body.encode("utf-8"), digest_size=8).digest()
            if digest in self.seen:
                continue
            self.seen.add(digest)
            return title, body, count_chunks(body, blocks)


def count_chunks(body: str, blocks) -> int:
    """Chunks of `body` = "\\n\\n".join(blocks) + "\\n" under the default policy."""
    # Units: each block plus its trailing blank line (the last one: its final newline).
    # Sections start at each heading; every heading here is followed by a paragraph, so no
    # section is empty and none is merged into the next.
    total = 0
    pos = 0
    section_start = 0
    pieces = []
    for kind, text in blocks:
        end = pos + len(text) + 2
        if kind == "h" and pieces:
            total += count_section(body, section_start, pieces, True)
            pieces = []
            section_start = pos
        pieces.append((pos, min(end, len(body))))
        pos = end
    total += count_section(body, section_start, pieces, True)
    return total


def draw_readers(rng: random.Random) -> list[str] | None:
    """`--access`: a document's readers (None: it names none), from `rng` alone."""
    if rng.random() < ACCESS_OPEN:
        return None
    r = rng.random()
    want = 1 if r < 0.5 else 2 if r < 0.8 else 3
    readers: list[str] = []
    while len(readers) < want:
        pool = ACCESS_GROUPS if rng.random() < ACCESS_GROUP_SHARE else ACCESS_USERS
        reader = pool[int(rng.random() * len(pool))]
        if reader not in readers:
            readers.append(reader)
    return readers


def yaml_string(s: str) -> str:
    # A JSON string is a valid YAML double-quoted scalar.
    return json.dumps(s, ensure_ascii=False)


def write_corpus(args, passages) -> None:
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        sys.exit(f"{out} exists and is not empty: choose a new folder")
    out.mkdir(parents=True, exist_ok=True)
    gen = Generator(passages, args.seed)
    rng = gen.rng
    # `--access` draws from a stream of its own: the documents stay those of the same seed.
    access_rng = random.Random(f"access-{args.seed}") if args.access else None
    access_docs = {"open": 0, "restricted": 0, "readers": 0}
    started = time.monotonic()
    docs = 0
    chunks = 0
    total_bytes = 0
    per_scope = [0] * len(SCOPES)
    folder = None
    while True:
        if args.docs is not None and docs >= args.docs:
            break
        if args.chunks is not None and chunks >= args.chunks:
            break
        title, body, n = gen.document()
        if args.chunks is not None:
            # The last documents: draw until one fits, so the total is exact.
            tries = 0
            while chunks + n > args.chunks:
                title, body, n = gen.document()
                tries += 1
                if tries > 10_000:
                    sys.exit("could not hit the chunk target exactly")
        scope_index = int(rng.random() * len(SCOPES))
        doc_id = f"scale-{docs:07d}"
        front = [
            "---",
            f"id: {doc_id}",
            f"scope: {SCOPES[scope_index]}",
            f"title: {yaml_string(title)}",
        ]
        if rng.random() < 0.9:
            front.append("locale: zh-CN")
        front.append(f"team: {gen.pick(TEAMS)}")
        front.append(f"year: {2015 + int(rng.random() * 12)}")
        if access_rng is not None:
            readers = draw_readers(access_rng)
            if readers is None:
                access_docs["open"] += 1
            else:
                front.append(f"access: [{', '.join(readers)}]")
                access_docs["restricted"] += 1
                access_docs["readers"] += len(readers)
        front.append("---\n")
        data = ("\n".join(front) + body).encode("utf-8")
        if docs % FILES_PER_FOLDER == 0:
            folder = os.path.join(out, f"part-{docs // FILES_PER_FOLDER:04d}")
            os.mkdir(folder)
        fd = os.open(f"{folder}/doc-{docs:07d}.md", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        finally:
            os.close(fd)
        total_bytes += len(data)
        per_scope[scope_index] += 1
        docs += 1
        chunks += n
    elapsed = time.monotonic() - started
    summary = {
        "generator": "scripts/make-scale-corpus.py",
        "seed": args.seed,
        "source": "CMRC 2018 dev (CC BY-SA 4.0); derived data, same licence",
        "chunking_policy": {
            "version": CHUNKER_VERSION,
            "max_chars": MAX_CHARS,
            "overlap_chars": OVERLAP_CHARS,
        },
        "files": docs,
        "folders": (docs + FILES_PER_FOLDER - 1) // FILES_PER_FOLDER,
        "bytes": total_bytes,
        "expected_chunks": chunks,
        "docs_per_scope": dict(zip(SCOPES, per_scope)),
    }
    if access_rng is not None:
        summary["access"] = {
            "open_share": ACCESS_OPEN,
            "groups": len(ACCESS_GROUPS),
            "users": len(ACCESS_USERS),
            "group_share": ACCESS_GROUP_SHARE,
            "docs_open": access_docs["open"],
            "docs_restricted": access_docs["restricted"],
            "readers": access_docs["readers"],
        }
    with open(out / ".scale-corpus.json", "w", encoding="utf-8") as f:
        json.dump(summary, f, ensure_ascii=False, indent=2)
        f.write("\n")
    print(
        f"{out}: {docs} files in {summary['folders']} folders, {total_bytes} bytes "
        f"({total_bytes / 1e6:.1f} MB), expected chunks {chunks} "
        f"({chunks / max(docs, 1):.3f} per file; chunker v{CHUNKER_VERSION} "
        f"max={MAX_CHARS} overlap={OVERLAP_CHARS}), written in {elapsed:.1f} s"
    )
    if access_rng is not None:
        a = summary["access"]
        print(
            f"access: {a['docs_open']} documents open, {a['docs_restricted']} with readers "
            f"({a['readers'] / max(a['docs_restricted'], 1):.2f} readers each)"
        )


def write_queries(args) -> None:
    rows = []
    with open(Path(args.cmrc) / "queries.jsonl", encoding="utf-8") as f:
        for line in f:
            d = json.loads(line)
            text = " ".join(d["text"].split())
            if text:
                rows.append((d["_id"], text))
    rng = random.Random(f"queries-{args.seed}")
    picked = rng.sample(rows, min(args.query_count, len(rows)))
    path = Path(args.queries)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for i, (qid, text) in enumerate(picked):
            # `scope`: a scope to use when a bench searches one of the 10 scopes.
            row = {"id": qid, "text": text, "scope": SCOPES[i % len(SCOPES)]}
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{path}: {len(picked)} queries from {len(rows)} CMRC questions")


def main() -> None:
    repo = Path(__file__).resolve().parent.parent
    p = argparse.ArgumentParser(
        description="Write the scale corpus (CMRC sentences recombined into Markdown files).",
    )
    p.add_argument("out", nargs="?", help="output folder (must be new or empty)")
    size = p.add_mutually_exclusive_group()
    size.add_argument("--chunks", type=int, help="exact total chunks under the default policy")
    size.add_argument("--docs", type=int, help="number of documents")
    p.add_argument("--seed", type=int, default=15, help="random seed (default 15)")
    p.add_argument(
        "--cmrc",
        default=str(repo.parent / "shared" / "datasets" / "cmrc2018-dev"),
        help="folder with corpus.jsonl and queries.jsonl (default ../shared/datasets/cmrc2018-dev)",
    )
    p.add_argument(
        "--access",
        action="store_true",
        help="give ~70%% of the documents readers (access: [...]) from group:g0..g19 and "
        "user:u0@corp..u49@corp (default: none, output unchanged)",
    )
    p.add_argument("--queries", help="also write this JSONL of query texts")
    p.add_argument("--query-count", type=int, default=1000, help="queries to write (default 1000)")
    args = p.parse_args()
    if args.out is None and args.queries is None:
        p.error("give an output folder, --queries FILE, or both")
    if args.out is not None and args.chunks is None and args.docs is None:
        p.error("give --chunks N or --docs N")
    for name in ("chunks", "docs"):
        v = getattr(args, name)
        if v is not None and v < 1:
            p.error(f"--{name} must be at least 1")
    if args.out is not None:
        write_corpus(args, load_sentences(Path(args.cmrc)))
    if args.queries is not None:
        write_queries(args)


if __name__ == "__main__":
    main()
