#!/usr/bin/env python3
"""Writes the tokenizer.json of a GGUF chat model (the local Qwen2.5 generator's) from the GGUF
file alone, for zhiku's `generator_tokenizer` and for measuring the token estimate.

    python3 -m venv /tmp/tok && /tmp/tok/bin/pip install transformers gguf tokenizers
    /tmp/tok/bin/python scripts/make-qwen-tokenizer.py MODEL.gguf OUT/tokenizer.json

No hub is asked: the vocabulary and merges are read from the GGUF's metadata with the `gguf`
package and turned into a `tokenizers` model by transformers' own GGUF converter (the code
`from_pretrained(gguf_file=...)` runs, without the torch import that path needs). Checked on
1,241 texts (CMRC passages, the manual, hostile strings): the same token IDs as llama.cpp's
tokenizer for every one once special-token spellings are counted as text.
"""
import sys

from gguf import GGUFReader
from gguf.constants import GGUFValueType
from transformers.integrations.gguf.gguf_tokenizer_mapping import (
    GGUF_TOKENIZER_MAPPING,
    convert_gguf_tokenizer,
)


def value(field):
    kind = field.types[0]
    if kind == GGUFValueType.ARRAY:
        if field.types[-1] == GGUFValueType.STRING:
            return [bytes(field.parts[i]).decode("utf-8") for i in field.data]
        return [field.parts[i].tolist()[0] for i in field.data]
    if kind == GGUFValueType.STRING:
        return bytes(field.parts[field.data[0]]).decode("utf-8")
    return field.parts[field.data[0]].tolist()[0]


def main(gguf_path, out):
    reader = GGUFReader(gguf_path)
    meta = {
        name: value(f)
        for name, f in reader.fields.items()
        if name.startswith(("tokenizer.", "general.architecture"))
    }
    mapping = GGUF_TOKENIZER_MAPPING["tokenizer"]
    wanted = {n: meta[f"tokenizer.{k}"] for k, n in mapping.items() if f"tokenizer.{k}" in meta}
    backend, _ = convert_gguf_tokenizer(meta["general.architecture"], wanted)
    backend.save(out)
    print(f"{out}: {backend.get_vocab_size(with_added_tokens=True)} tokens")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: make-qwen-tokenizer.py MODEL.gguf OUT/tokenizer.json")
    main(sys.argv[1], sys.argv[2])
