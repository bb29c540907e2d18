#!/usr/bin/env python3
"""make-paraphrases.py — a harder CMRC 2018 question set (issue 17): the same questions,
reworded by a local LLM so that they share fewer words with their passage.

Lexical retrieval does well on CMRC because the questions were written by people looking at
the passage and they reuse its words. This script asks an LLM (the OpenAI-compatible server
of scripts/llm-server.sh) to rewrite each sampled question in Simplified Chinese, keeping
its meaning and answer while replacing the words it shares with the passage by synonyms,
descriptions or another sentence structure. Every candidate is checked; the one kept is the
candidate with the least character-bigram overlap with the passage among those that pass.

    python3 scripts/make-paraphrases.py generate [--limit 600] [--seed 17]
    python3 scripts/make-paraphrases.py stats
    python3 scripts/make-paraphrases.py assemble OUT_DIR [--original]

generate  appends to evals/cmrc-paraphrased/queries.jsonl (kept paraphrases) and
          evals/cmrc-paraphrased/rejected.jsonl (questions with no acceptable candidate);
          IDs found in either file are skipped, so an interrupted run resumes where it
          stopped. qrels/test.tsv is rewritten from queries.jsonl at the end.
stats     prints counts, rejection reasons and mean overlaps before/after.
assemble  makes a BEIR folder `zhiku eval --beir` can read (it wants corpus.jsonl,
          queries.jsonl, qrels/test.tsv and optionally spans.jsonl in one folder): symlinks
          to the shared corpus.jsonl and spans.jsonl, plus the paraphrased queries and their
          qrels. With --original the same question IDs get their original wording, the
          baseline to compare with.

The sample is a pure function of --seed: passages are shuffled, then questions are taken
round-robin (one random question of every passage, then a second one, ...), and --limit
takes a prefix of that order, so a larger limit extends a smaller one.

Python 3 standard library only. The corpus is read from ../shared/datasets/cmrc2018-dev
(--data) and never copied into the repository.
"""

import argparse
import collections
import json
import os
import random
import re
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
DEFAULT_DATA = os.path.normpath(os.path.join(REPO, "..", "shared", "datasets", "cmrc2018-dev"))
DEFAULT_OUT = os.path.join(REPO, "evals", "cmrc-paraphrased")
DEFAULT_URL = "http://127.0.0.1:8088/v1"

# ------------------------------------------------------------------ text helpers

PUNCT_TO_ASCII = str.maketrans({"?": "？", "!": "！", ",": "，", ":": "：", ";": "；"})
# Characters that count for the bigram overlap: CJK ideographs, Latin letters and digits.
WORD_CHAR = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbfA-Za-z0-9]")
CJK = re.compile(r"[\u4e00-\u9fff\u3400-\u4dbf]")
QUESTION_WORDS = ("什么", "哪", "谁", "多少", "几", "如何", "怎么", "怎样", "为何", "为什么",
                  "是否", "吗", "呢", "何", "多久", "多大", "多长", "多高", "多远")
# Common Traditional-only characters; a candidate using any of them is not Simplified.
TRADITIONAL = set("們這個國會說時來為麼與對於從學機關開發經濟區門問題種還點爲後裡邊過讓")
# Single characters that make a shared string a function-word fragment, not a content word.
FUNCTION_CHARS = set("的是了在和与及或而也都就被把由从对于为以之其这那有个")


def normalize(text):
    """Strips and turns ASCII sentence punctuation into its full-width form."""
    return text.strip().translate(PUNCT_TO_ASCII)


def content(text):
    """The characters that count for overlap (lower-cased Latin)."""
    return "".join(WORD_CHAR.findall(text)).lower()


def bigrams(text):
    """Character bigrams of the counted characters, within runs (punctuation breaks a run)."""
    out = set()
    for run in re.findall(r"[\u4e00-\u9fff\u3400-\u4dbfA-Za-z0-9]+", text.lower()):
        out.update(run[i:i + 2] for i in range(len(run) - 1))
    return out


def overlap(question, passage_bigrams):
    """Share of the question's distinct character bigrams that occur in the passage."""
    q = bigrams(question)
    if not q:
        return 0.0
    return len(q & passage_bigrams) / len(q)


def shared_words(question, passage):
    """Maximal substrings (>= 2 counted characters) of the question found in the passage,
    left to right, skipping fragments made only of function characters."""
    words = []
    for run in re.findall(r"[\u4e00-\u9fff\u3400-\u4dbfA-Za-z0-9]+", question):
        i = 0
        while i < len(run) - 1:
            j = i + 2
            if run[i:j] not in passage:
                i += 1
                continue
            while j < len(run) and run[i:j + 1] in passage:
                j += 1
            word = run[i:j]
            if not all(c in FUNCTION_CHARS for c in word) and word not in words:
                words.append(word)
            i = j
    return words


def longest_common(a, b):
    """The longest common substring of a and b."""
    best = ""
    for i in range(len(a)):
        for j in range(i + len(best) + 1, len(a) + 1):
            if a[i:j] in b:
                best = a[i:j]
            else:
                break
    return best


def protected(question, title):
    """What a paraphrase must keep: the passage's title (its subject, usually a name) or the
    part of it the question uses (at least half of it), names in 《》, and tokens with digits
    (years, counts, codes). Without these a rewrite turns "银纹笛鲷适合哪种吃法" into "this
    fish", which no longer says what it asks about."""
    keep = []
    t = re.sub(r"[（(].*?[）)]", "", title).strip()
    common = longest_common(t, question) if t else ""
    if len(content(common)) >= 2 and len(common) >= 0.5 * len(t):
        keep.append(common)
    keep += [m for m in re.findall(r"《([^》]+)》", question) if m]
    keep += re.findall(r"[A-Za-z0-9.]*[0-9][A-Za-z0-9.]*", question)
    out = []
    for k in keep:
        if k and not any(k in o for o in out):
            out = [o for o in out if o not in k] + [k]
    return out


def sentences(text):
    """(start, end) character ranges of the passage's sentences."""
    out, start = [], 0
    for m in re.finditer(r"[。！？；!?\n]+", text):
        out.append((start, m.end()))
        start = m.end()
    if start < len(text):
        out.append((start, len(text)))
    return out


def context_for(passage, span, question, limit=240):
    """The passage text the question is about: the answer's sentence with the sentences
    before and after it (or, without a span, the sentence sharing most bigrams with the
    question), cut to `limit` characters around the answer."""
    ranges = sentences(passage)
    if not ranges:
        return passage[:limit]
    idx = None
    if span is not None:
        for n, (s, e) in enumerate(ranges):
            if s <= span["start"] < e:
                idx = n
                break
    if idx is None:
        qb = bigrams(question)
        idx = max(range(len(ranges)), key=lambda n: len(qb & bigrams(passage[slice(*ranges[n])])))
    s = ranges[max(0, idx - 1)][0]
    e = ranges[min(len(ranges) - 1, idx + 1)][1]
    text = passage[s:e].strip()
    if len(text) > limit:
        # Keep the part around the answer.
        centre = (span["start"] - s) if span is not None else len(text) // 2
        lo = max(0, min(centre - limit // 2, len(text) - limit))
        text = text[lo:lo + limit]
    return text


# ------------------------------------------------------------------------- data

def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def load(data_dir):
    corpus = {p["_id"]: p for p in read_jsonl(os.path.join(data_dir, "corpus.jsonl"))}
    queries = read_jsonl(os.path.join(data_dir, "queries.jsonl"))
    spans = {s["query_id"]: s for s in read_jsonl(os.path.join(data_dir, "spans.jsonl"))}
    qrels = collections.defaultdict(list)
    with open(os.path.join(data_dir, "qrels", "test.tsv"), encoding="utf-8") as f:
        for n, line in enumerate(f):
            cols = line.rstrip("\n").split("\t")
            if n == 0 and cols[0] == "query-id" or len(cols) < 3:
                continue
            if float(cols[2]) > 0:
                qrels[cols[0]].append((cols[1], cols[2]))
    return corpus, queries, spans, qrels


def sample_order(queries, qrels, seed):
    """All judged question IDs in the sampling order: passages shuffled, questions taken
    round-robin, one per passage per round, each passage's questions shuffled."""
    rng = random.Random(seed)
    by_passage = collections.defaultdict(list)
    for q in queries:
        rel = qrels.get(q["_id"])
        if rel:
            by_passage[rel[0][0]].append(q["_id"])
    passages = sorted(by_passage)
    rng.shuffle(passages)
    for p in passages:
        rng.shuffle(by_passage[p])
    order, round_ = [], 0
    while True:
        picked = [by_passage[p][round_] for p in passages if round_ < len(by_passage[p])]
        if not picked:
            return order
        order.extend(picked)
        round_ += 1


# -------------------------------------------------------------------------- LLM

SYSTEM = "你是一名严谨的中文编辑，擅长在不改变原意的前提下改写问题。"

# The fixed part comes first: the server reuses the evaluated prefix of the previous prompt,
# so only the question-specific tail is evaluated anew. The examples are made up (not CMRC).
INSTRUCTIONS = (
    "把问题改写成另一种说法：意思和答案都不变，仍是问句，但要把“需替换的词语”换成同义词"
    "或解释性的描述，也可以调整语序。“必须保留”的名称和数字要原样保留，不要用“这种”“该”等代词代替名称。"
    "不要回答问题，不要增删信息，只输出3个改写后的问句，每行一个。\n\n"
    "示例\n原问题：长江大桥是在哪一年建成通车的？\n需替换的词语：长江大桥、建成通车\n改写：\n"
    "横跨长江的那座大桥于何年竣工并开放通行？\n那座跨越长江的桥梁是哪一年完工、允许车辆通过的？\n"
    "哪一年，长江上的这座大桥落成并投入使用？\n\n"
    "示例\n原问题：沙棘的果实有什么用途？\n必须保留：沙棘\n需替换的词语：果实、用途\n改写：\n"
    "沙棘结出的果子可以拿来做什么？\n沙棘所结的籽实能派上什么用场？\n"
    "人们会把沙棘的果子用在哪些地方？\n\n"
)


def prompt_for(question, words, keep):
    listed = "、".join(words) if words else "（无）"
    kept = f"必须保留：{'、'.join(keep)}\n" if keep else ""
    return f"{INSTRUCTIONS}原问题：{question}\n{kept}需替换的词语：{listed}\n改写：\n"


QA_INSTRUCTIONS = "根据原文回答问题。只输出原文中的答案片段，不要解释。\n\n"


def qa_prompt_for(context, question):
    return f"{QA_INSTRUCTIONS}原文：{context}\n问题：{question}\n答案："


def same_answer(predicted, gold):
    """Whether the model's answer to the paraphrase matches the gold span: one contains the
    other (the shorter at least 40 % as long as the gold), or their character F1 >= 0.5."""
    p, g = content(predicted), content(gold)
    if not p or not g:
        return False
    if (g in p or p in g) and len(p) >= 0.4 * len(g):
        return True
    common = sum((collections.Counter(p) & collections.Counter(g)).values())
    if not common:
        return False
    prec, rec = common / len(p), common / len(g)
    return 2 * prec * rec / (prec + rec) >= 0.5


def chat(url, prompt, temperature, max_tokens, seed, timeout):
    body = json.dumps({
        "model": "local",
        "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": prompt}],
        "temperature": temperature,
        "top_p": 0.9,
        "max_tokens": max_tokens,
        "seed": seed,
    }).encode("utf-8")
    req = urllib.request.Request(url.rstrip("/") + "/chat/completions", data=body,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=timeout) as r:
        reply = json.load(r)
    text = reply["choices"][0]["message"]["content"] or ""
    usage = reply.get("usage") or {}
    return text, usage


def model_id(url):
    try:
        with urllib.request.urlopen(url.rstrip("/") + "/models", timeout=5) as r:
            return ",".join(m["id"] for m in json.load(r)["data"])
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        sys.exit(f"no LLM server at {url} ({e}); start it with: bash scripts/llm-server.sh start")


def candidates(reply):
    """The candidate lines of a reply, stripped of numbering, bullets and quotes."""
    out = []
    for line in reply.splitlines():
        # Echoed prompt lines ("原问题：…", "必须保留：…") are not candidates.
        if re.match(r"\s*(?:原问题|必须保留|需替换的词语|示例|原文|答案)\s*[:：]?", line):
            continue
        line = re.sub(r"^\s*(?:[-*•]|\d+[.、)）:：]|[（(]\d+[)）]|改写\d*[:：])\s*", "", line)
        line = normalize(line.strip().strip("\"'“”‘’「」"))
        if line and line not in out:
            out.append(line)
    return out


def check(cand, original, answer, passage_bigrams, before, keep=()):
    """None when the candidate is acceptable, else the reason it is not."""
    if not cand:
        return "empty"
    if any(k.lower() not in cand.lower() for k in keep):
        return "drops-entity"
    if any(c in TRADITIONAL for c in cand):
        return "traditional"
    counted = content(cand)
    if not counted or len(CJK.findall(cand)) < 0.5 * len(counted):
        return "not-chinese"
    if not cand.endswith("？"):
        if any(w in cand for w in QUESTION_WORDS) and not cand.endswith(("。", "！")):
            cand += "？"
        else:
            return "not-question"
    if content(cand) == content(original):
        return "identical"
    a = content(answer)
    if a and a in content(cand) and a not in content(original):
        return "contains-answer"
    n, m = len(counted), len(content(original))
    if n < max(5, 0.4 * m) or n > max(2.0 * m, m + 12) or len(cand) > 90:
        return "length"
    if overlap(cand, passage_bigrams) >= before:
        return "overlap-not-lower"
    return None


def finish(cand):
    return cand if cand.endswith("？") else cand + "？"


# --------------------------------------------------------------------- commands

def done_ids(out_dir):
    ids = set()
    for name in ("queries.jsonl", "rejected.jsonl"):
        path = os.path.join(out_dir, name)
        if os.path.exists(path):
            ids.update(r["_id"] for r in read_jsonl(path))
    return ids


def write_qrels(out_dir, qrels):
    kept = read_jsonl(os.path.join(out_dir, "queries.jsonl"))
    os.makedirs(os.path.join(out_dir, "qrels"), exist_ok=True)
    with open(os.path.join(out_dir, "qrels", "test.tsv"), "w", encoding="utf-8") as f:
        f.write("query-id\tcorpus-id\tscore\n")
        for r in kept:
            for doc, score in qrels[r["_id"]]:
                f.write(f"{r['_id']}\t{doc}\t{score}\n")
    return len(kept)


def ask(args, prompt, temperature, max_tokens, seed, counters):
    """One chat completion; None when the request failed (logged, then skipped)."""
    try:
        reply, usage = chat(args.url, prompt, temperature, max_tokens, seed, args.timeout)
    except (urllib.error.URLError, OSError, ValueError, KeyError) as e:
        print(f"request failed: {e}", file=sys.stderr)
        time.sleep(5)
        return None
    counters["completion_tokens"] += int(usage.get("completion_tokens", 0))
    counters["requests"] += 1
    return reply


def propose(args, item, counters):
    """Asks for candidates (up to --attempts requests) and checks them; fills item["passing"]
    (candidate, overlap) sorted by overlap, and item["tried"] with (candidate, reason)."""
    prompt = prompt_for(item["original"], item["words"], item["keep"])
    for attempt in range(args.attempts):
        reply = ask(args, prompt, args.temperature + 0.3 * attempt, args.max_tokens,
                    args.seed + attempt, counters)
        if reply is None:
            continue
        for cand in candidates(reply)[:5]:
            if any(cand == c for c, _ in item["tried"]):
                continue
            reason = check(cand, item["original"], item["answer"], item["pb"], item["before"],
                           item["keep"])
            item["tried"].append((cand, reason or "ok"))
            if reason is None:
                cand = finish(cand)
                if all(cand != c for c, _ in item["passing"]):
                    item["passing"].append((cand, overlap(cand, item["pb"])))
        if item["passing"]:
            break
    item["passing"].sort(key=lambda x: x[1])


def verify(args, item, counters):
    """Answer check: the model reads the passage context and answers each passing candidate,
    least overlap first; the first whose answer matches the gold span is kept."""
    for n, (cand, after) in enumerate(item["passing"][:args.qa_tries]):
        reply = ask(args, qa_prompt_for(item["context"], cand), 0.0, 48, args.seed, counters)
        if reply is None:
            continue
        predicted = reply.strip().splitlines()[0] if reply.strip() else ""
        if same_answer(predicted, item["answer"]):
            return cand, after, predicted
        item["tried"] = [(c, "answer-differs" if c.rstrip("？") == cand.rstrip("？") else r)
                         for c, r in item["tried"]]
        item.setdefault("qa", []).append(predicted)
    return None


def generate(args):
    corpus, queries, spans, qrels = load(args.data)
    text_of = {q["_id"]: q["text"] for q in queries}
    order = sample_order(queries, qrels, args.seed)[:args.limit]
    os.makedirs(args.out, exist_ok=True)
    done = done_ids(args.out)
    todo = [qid for qid in order if qid not in done and qid in spans]
    model = model_id(args.url)
    print(f"model {model}; sample {len(order)} (seed {args.seed}); done {len(order) - len(todo)};"
          f" to do {len(todo)}", file=sys.stderr)
    kept_f = open(os.path.join(args.out, "queries.jsonl"), "a", encoding="utf-8")
    rej_f = open(os.path.join(args.out, "rejected.jsonl"), "a", encoding="utf-8")
    t_start, n_done = time.time(), 0
    counters = collections.Counter()
    deadline = t_start + args.minutes * 60 if args.minutes else None
    # Batches: all rewriting prompts of a batch, then all answer checks, so that consecutive
    # prompts share their fixed prefix and the server's prompt cache is reused.
    for b in range(0, len(todo), args.batch):
        if deadline and time.time() > deadline:
            print("time budget reached; run again to resume", file=sys.stderr)
            break
        batch = []
        for qid in todo[b:b + args.batch]:
            doc = corpus[qrels[qid][0][0]]
            whole = doc.get("title", "") + "\n" + doc["text"]
            original = normalize(text_of[qid])
            pb = bigrams(whole)
            span = spans[qid]
            keep = protected(original, doc.get("title", ""))
            words = []
            for w in shared_words(original, whole):
                for k in keep:      # the parts of a shared string outside the kept names
                    w = w.replace(k, " ")
                words += [p for p in w.split() if len(content(p)) >= 2 and p not in words
                          and not all(c in FUNCTION_CHARS for c in p)]
            words = words[:10]
            batch.append({
                "_id": qid, "original": original, "answer": span["answer"], "pb": pb,
                "before": overlap(original, pb), "words": words, "keep": keep,
                "context": context_for(doc["text"], span, original, args.context_chars),
                "tried": [], "passing": [],
            })
        for item in batch:
            propose(args, item, counters)
        for item in batch:
            best = verify(args, item, counters) if item["passing"] else None
            n_done += 1
            if best is not None:
                rec = {"_id": item["_id"], "text": best[0], "original": item["original"],
                       "overlap_before": round(item["before"], 4),
                       "overlap_after": round(best[1], 4), "check_answer": best[2]}
                kept_f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                kept_f.flush()
            else:
                rec = {"_id": item["_id"], "original": item["original"],
                       "overlap_before": round(item["before"], 4),
                       "candidates": [c for c, _ in item["tried"]],
                       "reasons": [r for _, r in item["tried"]] or ["no-reply"],
                       "check_answers": item.get("qa", [])}
                rej_f.write(json.dumps(rec, ensure_ascii=False) + "\n")
                rej_f.flush()
            if args.verbose or n_done % 10 == 0:
                el = time.time() - t_start
                print(f"[{n_done}/{len(todo)}] {el / n_done:.1f} s/question, "
                      f"{counters['completion_tokens'] / el:.1f} tok/s, "
                      f"{counters['requests'] / n_done:.1f} requests/question | "
                      f"{item['original']} -> {best[0] if best else '(rejected)'}",
                      file=sys.stderr)
    kept_f.close()
    rej_f.close()
    n = write_qrels(args.out, qrels)
    print(f"{n} paraphrases kept; qrels written", file=sys.stderr)


def stats(args):
    kept = read_jsonl(os.path.join(args.out, "queries.jsonl"))
    rej_path = os.path.join(args.out, "rejected.jsonl")
    rejected = read_jsonl(rej_path) if os.path.exists(rej_path) else []
    mean = lambda xs: sum(xs) / len(xs) if xs else float("nan")
    before = [r["overlap_before"] for r in kept]
    after = [r["overlap_after"] for r in kept]
    reasons = collections.Counter(x for r in rejected for x in r["reasons"])
    all_before = before + [r["overlap_before"] for r in rejected]
    passages = len({r["_id"].rsplit("_QUERY_", 1)[0] for r in kept})
    out = {
        "attempted": len(kept) + len(rejected),
        "kept": len(kept),
        "rejected": len(rejected),
        "passages": passages,
        "overlap_before_mean_kept": round(mean(before), 4),
        "overlap_after_mean_kept": round(mean(after), 4),
        "overlap_before_mean_attempted": round(mean(all_before), 4),
        "overlap_after_median_kept": round(sorted(after)[len(after) // 2], 4) if after else None,
        "after_zero": sum(1 for x in after if x == 0),
        "length_ratio_mean": round(mean([len(r["text"]) / len(r["original"]) for r in kept]), 3),
        "rejected_candidate_reasons": dict(reasons.most_common()),
    }
    print(json.dumps(out, ensure_ascii=False, indent=1))


def assemble(args):
    out_dir = os.path.abspath(args.out_dir)
    os.makedirs(os.path.join(out_dir, "qrels"), exist_ok=True)
    for name in ("corpus.jsonl", "spans.jsonl", "LICENCE"):
        src = os.path.abspath(os.path.join(args.data, name))
        dst = os.path.join(out_dir, name)
        if os.path.lexists(dst):
            os.remove(dst)
        if os.path.exists(src):
            os.symlink(src, dst)
    kept = read_jsonl(os.path.join(args.out, "queries.jsonl"))
    with open(os.path.join(out_dir, "queries.jsonl"), "w", encoding="utf-8") as f:
        for r in kept:
            text = r["original"] if args.original else r["text"]
            f.write(json.dumps({"_id": r["_id"], "text": text}, ensure_ascii=False) + "\n")
    # The judgements of the kept IDs, straight from the source (the same as qrels/test.tsv).
    qrels = load(args.data)[3]
    with open(os.path.join(out_dir, "qrels", "test.tsv"), "w", encoding="utf-8") as d:
        d.write("query-id\tcorpus-id\tscore\n")
        for r in kept:
            for doc, score in qrels[r["_id"]]:
                d.write(f"{r['_id']}\t{doc}\t{score}\n")
    print(f"{out_dir}: {len(kept)} {'original' if args.original else 'paraphrased'} questions;"
          f" corpus and spans linked from {os.path.abspath(args.data)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=DEFAULT_DATA, help="the CMRC 2018 dev BEIR folder")
    ap.add_argument("--out", default=DEFAULT_OUT, help="the paraphrase set folder")
    sub = ap.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="paraphrase the sample (resumable)")
    g.add_argument("--limit", type=int, default=600, help="sample size (prefix of the order)")
    g.add_argument("--seed", type=int, default=17)
    g.add_argument("--url", default=os.environ.get("ZHIKU_LLM_URL", DEFAULT_URL))
    g.add_argument("--temperature", type=float, default=0.3)
    g.add_argument("--attempts", type=int, default=2, help="requests per question at most")
    g.add_argument("--max-tokens", type=int, default=160)
    g.add_argument("--timeout", type=float, default=600)
    g.add_argument("--minutes", type=float, default=0, help="stop after this long (0: no limit)")
    g.add_argument("--batch", type=int, default=8, help="questions per batch")
    g.add_argument("--qa-tries", type=int, default=3, help="answer checks per question at most")
    g.add_argument("--context-chars", type=int, default=240,
                   help="passage context given to the answer check")
    g.add_argument("--verbose", action="store_true")
    sub.add_parser("stats", help="counts and overlap statistics")
    a = sub.add_parser("assemble", help="a BEIR folder for `zhiku eval --beir`")
    a.add_argument("out_dir")
    a.add_argument("--original", action="store_true",
                   help="the same question IDs in their original wording (the baseline)")
    args = ap.parse_args()
    {"generate": generate, "stats": stats, "assemble": assemble}[args.command](args)


if __name__ == "__main__":
    main()
