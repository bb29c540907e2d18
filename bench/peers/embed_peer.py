#!/usr/bin/env python3
"""Python embedding peer for zhiku's embedding benchmark.

Embeds every text of a JSONL file (one {"text": ...} per line) with a
sentence-transformers model on the CPU and reports the throughput as one JSON
line:

    python embed_peer.py --model-dir DIR --texts FILE.jsonl \
        --engine {sentence-transformers,onnxruntime} --batch-size N \
        --threads 2 --max-seq-length 256 --json

Fields: engine, batch_size, texts, seconds, passages_per_s, tokens_per_s,
peak_rss_mib (plus threads, max_seq_length, tokens and library versions).
`tokens` counts the model tokenizer's ids including [CLS]/[SEP], each text
truncated at --max-seq-length, i.e. the tokens the encoder actually sees
(padding not included). One batch is embedded first as a warm-up and is not
timed. Both engines order the texts by length before batching, as
sentence-transformers' encode() does, so padding waste is comparable.

The onnxruntime engine needs an ONNX export of the model: --onnx-model PATH,
or DIR/onnx/model.onnx, or DIR/model.onnx. With --export-onnx a missing file
is produced from the model's own safetensors weights with torch.onnx (the
default place is ${ZHIKU_CACHE_DIR:-~/.cache/zhiku}/models/<name>-onnx/model.onnx).
Without an ONNX model the peer prints {"engine": "onnxruntime", "skipped": ...}
and exits 0.

With --write-english FILE the script instead writes English passages (JSONL, one
{"id", "text"} per line) for the benchmark's English corpus: the prose of the Python
language reference that ships with every CPython interpreter (pydoc_data.topics, the
text behind help("topics")), cut at blank lines and packed into passages of at most
--passage-chars characters, in the order of the sorted topic names.

The environment from scripts/python-embed-peers.sh has every package needed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from pathlib import Path

# Nothing here may reach a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def read_texts(path: Path, limit: int | None) -> list[str]:
    texts = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if not line:
                continue
            texts.append(json.loads(line)["text"])
            if limit is not None and len(texts) >= limit:
                break
    return texts


def load_tokenizer(model_dir: Path, max_seq_length: int):
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=max_seq_length)
    tok.no_padding()
    return tok


def count_tokens(tok, texts: list[str]) -> int:
    return sum(len(e.ids) for e in tok.encode_batch(texts))


def peak_rss_mib() -> float:
    # VmHWM belongs to this process image. ru_maxrss would not do: Linux carries it across
    # fork and exec, so it reports the parent's peak (the Rust bench) when that is larger.
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def default_onnx_path(model_dir: Path) -> Path:
    cache = Path(os.environ.get("ZHIKU_CACHE_DIR", Path.home() / ".cache" / "zhiku"))
    return cache / "models" / f"{model_dir.name}-onnx" / "model.onnx"


def find_onnx(model_dir: Path, explicit: Path | None) -> Path | None:
    candidates = [explicit] if explicit else [
        model_dir / "onnx" / "model.onnx",
        model_dir / "model.onnx",
        default_onnx_path(model_dir),
    ]
    for c in candidates:
        if c is not None and c.is_file():
            return c
    return None


def export_onnx(model_dir: Path, out: Path) -> None:
    """Export the encoder (token ids -> last hidden state) with torch.onnx."""
    import torch
    from transformers import AutoModel

    model = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager")
    model.eval()

    class Encoder(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=token_type_ids,
            ).last_hidden_state

    ids = torch.ones((2, 8), dtype=torch.int64)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".onnx.partial")
    with torch.no_grad():
        torch.onnx.export(
            Encoder(model),
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(tmp),
            input_names=["input_ids", "attention_mask", "token_type_ids"],
            output_names=["last_hidden_state"],
            dynamic_axes={
                "input_ids": {0: "batch", 1: "seq"},
                "attention_mask": {0: "batch", 1: "seq"},
                "token_type_ids": {0: "batch", 1: "seq"},
                "last_hidden_state": {0: "batch", 1: "seq"},
            },
            opset_version=17,
            do_constant_folding=True,
            dynamo=False,
        )
    tmp.replace(out)
    print(f"exported ONNX model to {out}", file=sys.stderr)


def batches(items: list, size: int):
    for i in range(0, len(items), size):
        yield items[i:i + size]


def length_order(tok, texts: list[str]) -> list[int]:
    """Indices of the texts, longest first, like sentence-transformers' encode()."""
    lengths = [len(e.ids) for e in tok.encode_batch(texts)]
    return sorted(range(len(texts)), key=lambda i: -lengths[i])


class SentenceTransformersEngine:
    name = "sentence-transformers"

    def __init__(self, args):
        import torch

        torch.set_num_threads(args.threads)
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(str(args.model_dir), device="cpu")
        self.model.max_seq_length = args.max_seq_length
        self.batch_size = args.batch_size
        import sentence_transformers

        self.versions = {
            "torch": torch.__version__,
            "sentence_transformers": sentence_transformers.__version__,
        }

    def embed(self, texts: list[str]):
        return self.model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )


class OnnxRuntimeEngine:
    name = "onnxruntime"

    def __init__(self, args, onnx_path: Path):
        import numpy as np
        import onnxruntime as ort

        self.np = np
        opts = ort.SessionOptions()
        opts.intra_op_num_threads = args.threads
        opts.inter_op_num_threads = 1
        opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(
            str(onnx_path), sess_options=opts, providers=["CPUExecutionProvider"]
        )
        self.input_names = {i.name for i in self.session.get_inputs()}
        self.tok = load_tokenizer(args.model_dir, args.max_seq_length)
        self.tok.enable_padding(pad_id=0, pad_token="[PAD]")  # to the longest in a batch
        self.batch_size = args.batch_size
        self.versions = {"onnxruntime": ort.__version__, "onnx_model": str(onnx_path)}

    def embed(self, texts: list[str]):
        np = self.np
        order = length_order(self.tok, texts)
        out = []
        for chunk in batches([texts[i] for i in order], self.batch_size):
            encs = self.tok.encode_batch(chunk)
            feed = {
                "input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64),
            }
            feed = {k: v for k, v in feed.items() if k in self.input_names}
            hidden = self.session.run(None, feed)[0]
            mask = feed["attention_mask"][:, :, None].astype(hidden.dtype)
            pooled = (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out.append(pooled)
        vectors = np.empty((len(texts), out[0].shape[1]), dtype=out[0].dtype)
        vectors[order] = np.concatenate(out)  # back to the input order
        return vectors


def english_passages(max_chars: int) -> list[str]:
    """Paragraphs of the Python language reference, packed into passages of <= max_chars."""
    from pydoc_data.topics import topics

    passages: list[str] = []
    current = ""
    for name in sorted(topics):
        for para in topics[name].split("\n\n"):
            # Words made only of *, =, -, ~ or ^ are heading underlines.
            para = " ".join(w for w in para.split() if not set(w) <= set("*=-~^"))
            if not para:
                continue
            para = para[:max_chars]
            if current and len(current) + 1 + len(para) > max_chars:
                passages.append(current)
                current = ""
            current = f"{current}\n{para}" if current else para
    if current:
        passages.append(current)
    return passages


def write_english(out: Path, limit: int | None, max_chars: int) -> None:
    passages = english_passages(max_chars)
    if limit is not None:
        passages = passages[:limit]
    with out.open("w", encoding="utf-8") as f:
        for i, text in enumerate(passages):
            f.write(json.dumps({"id": f"pyref-{i}", "text": text}, ensure_ascii=False) + "\n")
    print(f"wrote {len(passages)} English passages to {out}", file=sys.stderr)


def main() -> int:
    ap = argparse.ArgumentParser(description="Python embedding peer (throughput).")
    ap.add_argument("--write-english", type=Path, default=None, metavar="FILE",
                    help="write English passages (Python language reference) and exit")
    ap.add_argument("--passage-chars", type=int, default=900)
    ap.add_argument("--model-dir", type=Path)
    ap.add_argument("--texts", type=Path, help="JSONL, one {\"text\": ...} per line")
    ap.add_argument("--engine", choices=["sentence-transformers", "onnxruntime"],
                    default="sentence-transformers")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-seq-length", type=int, default=256)
    ap.add_argument("--limit", type=int, default=None, help="use only the first N texts")
    ap.add_argument("--onnx-model", type=Path, default=None)
    ap.add_argument("--export-onnx", action="store_true",
                    help="export the model to ONNX with torch when no ONNX file is found")
    ap.add_argument("--json", action="store_true", help="print only the JSON result line")
    args = ap.parse_args()

    if args.write_english is not None:
        write_english(args.write_english, args.limit, args.passage_chars)
        return 0
    if args.model_dir is None or args.texts is None:
        ap.error("--model-dir and --texts are required")
    if args.batch_size < 1 or args.threads < 1:
        ap.error("--batch-size and --threads must be at least 1")

    # Caps the BLAS/OpenMP pools too, for code paths that read only these.
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[var] = str(args.threads)

    texts = read_texts(args.texts, args.limit)
    if not texts:
        ap.error(f"no texts in {args.texts}")
    tok = load_tokenizer(args.model_dir, args.max_seq_length)
    n_tokens = count_tokens(tok, texts)

    if args.engine == "onnxruntime":
        onnx_path = find_onnx(args.model_dir, args.onnx_model)
        if onnx_path is None and args.export_onnx:
            target = args.onnx_model or default_onnx_path(args.model_dir)
            try:
                export_onnx(args.model_dir, target)
                onnx_path = target
            except Exception as e:  # torch or transformers missing, export failure
                print(f"ONNX export failed: {e}", file=sys.stderr)
        if onnx_path is None:
            print(json.dumps({
                "engine": "onnxruntime",
                "skipped": "no ONNX model found (give --onnx-model PATH, "
                           "or --export-onnx to export one with torch)",
            }))
            return 0
        engine = OnnxRuntimeEngine(args, onnx_path)
    else:
        engine = SentenceTransformersEngine(args)

    engine.embed(texts[:args.batch_size])  # warm-up, not timed

    start = time.perf_counter()
    vectors = engine.embed(texts)
    seconds = time.perf_counter() - start

    if len(vectors) != len(texts):
        raise SystemExit(f"engine returned {len(vectors)} vectors for {len(texts)} texts")

    result = {
        "engine": engine.name,
        "batch_size": args.batch_size,
        "texts": len(texts),
        "seconds": round(seconds, 4),
        "passages_per_s": round(len(texts) / seconds, 2),
        "tokens_per_s": round(n_tokens / seconds, 1),
        "peak_rss_mib": round(peak_rss_mib(), 1),
        "tokens": n_tokens,
        "threads": args.threads,
        "max_seq_length": args.max_seq_length,
        "dim": int(vectors.shape[1]),
        **engine.versions,
    }
    if not args.json:
        print(f"{engine.name}: {len(texts)} texts ({n_tokens} tokens) in {seconds:.2f}s "
              f"at batch size {args.batch_size}", file=sys.stderr)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
