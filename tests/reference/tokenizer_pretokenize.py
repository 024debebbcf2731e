#!/usr/bin/env python3
"""Reference pre-tokenizer splits from Hugging Face `tokenizers` (Oniguruma regexes, Digits).

Writes tests/fixtures/tokenizer/pretokenize_cases.json: for each string of tokenizer_strings.py
the pieces (raw text) that each pre-tokenizer produces, so the hand-written matchers are
checked piece by piece against the real regex engine.

Usage: python3 tests/reference/tokenizer_pretokenize.py   (needs: pip install tokenizers)
"""
import json
import os
import sys

import tokenizers
from tokenizers import Regex, pre_tokenizers as P

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_strings import all_strings  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"
LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
          r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = LLAMA3.replace(r"\p{N}{1,3}", r"\p{N}")

CONFIGS = {
    "gpt2": P.Split(Regex(GPT2), behavior="isolated"),
    "llama3": P.Split(Regex(LLAMA3), behavior="isolated"),
    "qwen2": P.Split(Regex(QWEN2), behavior="isolated"),
    "digits_individual": P.Digits(individual_digits=True),
    "digits_contiguous": P.Digits(individual_digits=False),
}


def main():
    strings = all_strings()
    out = {"generator": "tests/reference/tokenizer_pretokenize.py",
           "tokenizers_version": tokenizers.__version__, "strings": strings, "configs": {}}
    for name, pre in CONFIGS.items():
        out["configs"][name] = [[piece for piece, _ in pre.pre_tokenize_str(s)] for s in strings]
    path = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "pretokenize_cases.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=True, separators=(",", ":"))
    print(f"wrote {len(strings)} strings x {len(CONFIGS)} pre-tokenizers to {path}")


if __name__ == "__main__":
    main()
