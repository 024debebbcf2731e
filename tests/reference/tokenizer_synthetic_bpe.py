#!/usr/bin/env python3
"""Small BPE tokenizer.json files trained with Hugging Face `tokenizers`, and their reference ids.

Each configuration mirrors a real family's tokenizer.json layout (pre-tokenizer, added tokens
with their flags, post-processor, decoder) on a tiny vocabulary trained here, so the C++
tokenizer.json loader and pipeline are checked against `tokenizers` itself:
  gpt2_plain    GPT-2's own layout: ByteLevel(use_regex), one special token
  gpt2_added    ByteLevel(use_regex) + added tokens with lstrip/rstrip/single_word/normalized
                flags, one whose text is not byte-mapped; TemplateProcessing "<|bos|> $A <|eos|>"
  llama3        Split(Llama 3 regex) + ByteLevel(use_regex=false), ignore_merges, BOS template
  qwen2         Split(Qwen2 regex) + ByteLevel(use_regex=false)
  digits_prefix Digits(contiguous) + ByteLevel(add_prefix_space=true): prefix space per piece
  behaviors     Split with String/Regex patterns and every behavior, invert, then ByteLevel
  llama2_style  Llama 2's BPE layout: Prepend/Replace normalizer, byte_fallback, fuse_unk,
                Replace/ByteFallback/Fuse/Strip decoder, "<s> $A", a normalized added token

Writes tests/fixtures/tokenizer/synthetic/<name>/{tokenizer.json,tokenizer_config.json,
cases.json}; cases hold ids for encode(text) with and without special tokens and decode(ids)
with and without skip_special_tokens, for every string of tokenizer_strings.py.

Usage: python3 tests/reference/tokenizer_synthetic_bpe.py   (needs: pip install tokenizers)
"""
import json
import os
import sys

import tokenizers
from tokenizers import (AddedToken, Regex, Tokenizer, decoders, models, normalizers,
                        pre_tokenizers, processors, trainers)

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_strings import all_strings, training_corpus  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "synthetic")

LLAMA3 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
          r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+"
         r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

def train(pre, specials, vocab_size=700, byte_level=True, normalizer=None):
    tok = Tokenizer(models.BPE())
    if normalizer is not None:
        tok.normalizer = normalizer
    tok.pre_tokenizer = pre
    options = dict(vocab_size=vocab_size, special_tokens=specials, show_progress=False)
    if byte_level:
        options["initial_alphabet"] = pre_tokenizers.ByteLevel.alphabet()
    else:
        options["limit_alphabet"] = 120  # rarer characters are left to byte fallback
    trainer = trainers.BpeTrainer(**options)
    tok.train_from_iterator(training_corpus(), trainer=trainer)
    return tok


def template(tok, single):
    specials = [(t, tok.token_to_id(t)) for t in single.split() if t != "$A"]
    return processors.TemplateProcessing(single=single, special_tokens=specials)


def gpt2_added():
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                ["<|endoftext|>", "<|bos|>"])
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([
        AddedToken("<mask>", special=True, lstrip=True, rstrip=True, normalized=False),
        AddedToken("<|im_start|>", special=True, normalized=False),
        AddedToken("<|im_end|>", special=True, normalized=False, rstrip=True),
        AddedToken("<s>", special=True, normalized=False, single_word=True),
    ])
    tok.add_tokens([
        AddedToken("[WORD]", single_word=True, normalized=True),
        AddedToken("word", single_word=True, normalized=False),
        AddedToken(" hello world", normalized=False),
        AddedToken("é✓", normalized=True),
        AddedToken("ĠHi", normalized=False),
        AddedToken("abc", lstrip=True, normalized=True),
    ])
    tok.post_processor = template(tok, "<|bos|> $A <|endoftext|>")
    config = {"bos_token": "<|bos|>", "eos_token": "<|endoftext|>"}
    return tok, config


def gpt2_plain():
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
                ["<|endoftext|>"])
    tok.decoder = decoders.ByteLevel()
    return tok, {"eos_token": "<|endoftext|>"}


def llama3():
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                "<|end_header_id|>", "<|eot_id|>"]
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    tok = train(pre, specials)
    data = json.loads(tok.to_str())
    data["model"]["ignore_merges"] = True
    tok = Tokenizer.from_str(json.dumps(data))
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.Sequence([
        processors.ByteLevel(trim_offsets=False), template(tok, "<|begin_of_text|> $A")])
    config = {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"}
    return tok, config


def qwen2():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(QWEN2), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tok = train(pre, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.decoder = decoders.ByteLevel()
    return tok, {"eos_token": "<|im_end|>"}


def digits_prefix():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Digits(individual_digits=False),
        pre_tokenizers.ByteLevel(add_prefix_space=True, use_regex=True)])
    tok = train(pre, ["<|endoftext|>"])
    tok.decoder = decoders.ByteLevel()
    return tok, None


def behaviors():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split("-", behavior="merged_with_next"),
        pre_tokenizers.Split(Regex(r"\p{N}"), behavior="merged_with_previous"),
        pre_tokenizers.Split(Regex(r"\s+"), behavior="removed"),
        pre_tokenizers.Split(Regex(r"\p{N}+"), behavior="contiguous", invert=True),
        pre_tokenizers.Split(",", behavior="isolated", invert=True),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)])
    tok = train(pre, ["<|endoftext|>"])
    tok.decoder = decoders.ByteLevel()
    return tok, None


def llama2_style():
    specials = ["<unk>", "<s>", "</s>"]
    norm = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    # Trained with Metaspace splitting so that pieces stay word-like, then used without a
    # pre-tokenizer, as Llama 2's tokenizer.json is.
    tok = train(pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never"), specials,
                vocab_size=500, byte_level=False, normalizer=norm)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    # Byte tokens <0x00>..<0xFF> right after the specials, as in Llama 2's vocabulary.
    ordered = sorted(vocab.items(), key=lambda kv: kv[1])
    names = [t for t, _ in ordered[:3]] + [f"<0x{b:02X}>" for b in range(256)] + \
        [t for t, _ in ordered[3:]]
    data["model"]["vocab"] = {t: i for i, t in enumerate(names)}
    data["model"].update(byte_fallback=True, unk_token="<unk>", fuse_unk=True)
    data["added_tokens"] = [
        {"id": i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
         "normalized": False, "special": True} for i, t in enumerate(specials)]
    data["pre_tokenizer"] = None
    tok = Tokenizer.from_str(json.dumps(data))
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(),
                                     decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    # Added tokens matched in normalized text ("▁hello▁world") and in raw text.
    tok.add_tokens([AddedToken("hello world", normalized=True),
                    AddedToken("<tool>", normalized=False)])
    tok.post_processor = template(tok, "<s> $A")
    config = {"bos_token": "<s>", "eos_token": "</s>", "add_bos_token": True,
              "add_eos_token": False}
    return tok, config


def write(name, tok, config):
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    # Compact JSON: the fixtures stay small.
    data = json.loads(tok.to_str())
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(data, f, ensure_ascii=False, separators=(",", ":"))
    if config is not None:
        with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, ensure_ascii=False, indent=1)
    cases = []
    for text in all_strings():
        plain = tok.encode(text, add_special_tokens=False).ids
        with_special = tok.encode(text, add_special_tokens=True).ids
        cases.append({"text": text, "ids": plain, "ids_with_special": with_special,
                      "decoded": tok.decode(plain, skip_special_tokens=False),
                      "decoded_skip_special": tok.decode(plain, skip_special_tokens=True)})
    with open(os.path.join(folder, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tests/reference/tokenizer_synthetic_bpe.py",
                   "tokenizers_version": tokenizers.__version__, "cases": cases}, f,
                  ensure_ascii=True, separators=(",", ":"))
    print(f"{name}: vocab {tok.get_vocab_size()}, {len(cases)} cases")


def main():
    for name, make in [("gpt2_added", gpt2_added), ("gpt2_plain", gpt2_plain),
                       ("llama3", llama3), ("qwen2", qwen2),
                       ("digits_prefix", digits_prefix), ("behaviors", behaviors),
                       ("llama2_style", llama2_style)]:
        tok, config = make()
        write(name, tok, config)


if __name__ == "__main__":
    main()
