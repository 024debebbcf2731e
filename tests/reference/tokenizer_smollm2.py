#!/usr/bin/env python3
"""Reference ids for SmolLM2's byte-level BPE tokenizer, from Hugging Face `tokenizers`.

Writes tests/fixtures/tokenizer/smollm2_cases.json: for each string of tokenizer_strings.py the
ids of encode(text) (no special tokens added; SmolLM2 adds none), and decode(ids) with and
without skip_special_tokens.

The tokenizer is rebuilt from the GGUF's vocabulary and merges (read with the `gguf` package),
with SmolLM2's own tokenizer.json configuration (HuggingFaceTB/SmolLM2-135M-Instruct):
  - model BPE, no unk token, no byte fallback, ignore_merges false;
  - pre_tokenizer Sequence[Digits(individual_digits=true),
                           ByteLevel(add_prefix_space=false, trim_offsets=true, use_regex=true)];
  - decoder ByteLevel; post-processor ByteLevel (adds no tokens; add_bos_token is false);
  - added tokens: ids 0..16 (<|endoftext|>, <|im_start|>, <|im_end|>, <repo_name>, ...) special,
    normalized=false, no lstrip/rstrip/single_word.
Why this is SmolLM2's configuration: it is the tokenizer.json the model ships; the GGUF agrees
with it: tokenizer.ggml.pre = "smollm" is the name llama.cpp's converter gives to exactly this
pre-tokenizer (llama.cpp implements it as the regexes "\\p{N}" then the GPT-2 regex), its 17
CONTROL token types are the 17 special added tokens, and tokenizer.ggml.add_bos_token is false.

Usage: python3 tests/reference/tokenizer_smollm2.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
Needs: pip install gguf tokenizers
"""
import json
import os
import sys

from gguf import GGUFReader
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_strings import all_strings  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_GGUF = os.path.join(
    os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
    "hearth", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def build_tokenizer(gguf_path):
    reader = GGUFReader(gguf_path)
    tokens = reader.fields["tokenizer.ggml.tokens"].contents()
    types = reader.fields["tokenizer.ggml.token_type"].contents()
    merges = reader.fields["tokenizer.ggml.merges"].contents()
    assert reader.fields["tokenizer.ggml.pre"].contents() == "smollm"
    assert reader.fields["tokenizer.ggml.add_bos_token"].contents() is False
    vocab = {t: i for i, t in enumerate(tokens)}
    model = models.BPE(vocab=vocab, merges=[tuple(m.split(" ", 1)) for m in merges],
                       unk_token=None, byte_fallback=False, ignore_merges=False)
    tok = Tokenizer(model)
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=True),
    ])
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    specials = [AddedToken(tokens[i], special=True, normalized=False, lstrip=False, rstrip=False,
                           single_word=False) for i, t in enumerate(types) if t == 3]
    assert [tokens[i] for i, t in enumerate(types) if t == 3] == tokens[:17]
    tok.add_special_tokens(specials)
    return tok


def main():
    gguf_path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_GGUF
    tok = build_tokenizer(gguf_path)
    cases = []
    for text in all_strings():
        ids = tok.encode(text, add_special_tokens=False).ids
        cases.append({
            "text": text,
            "ids": ids,
            "decoded": tok.decode(ids, skip_special_tokens=False),
            "decoded_skip_special": tok.decode(ids, skip_special_tokens=True),
        })
    import tokenizers
    out = {
        "generator": "tests/reference/tokenizer_smollm2.py",
        "tokenizers_version": tokenizers.__version__,
        "cases": cases,
    }
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "smollm2_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, indent=0)
        f.write("\n")
    print(f"wrote {len(cases)} cases to {path}")


if __name__ == "__main__":
    main()
