#!/usr/bin/env python3
"""Sentencepiece reference models and ids.

Trains two small models with `spm_train` (Debian package `sentencepiece`) on the corpus of
tokenizer_strings.py:
  spm/bpe.model      Llama-style BPE: byte_fallback, split_digits, identity normalization, no
                     whitespace squeezing, dummy prefix; one user-defined and one control symbol.
  spm/unigram.model  Unigram with the default nmt_nfkc normalization (so it carries a real
                     precompiled_charsmap), no byte fallback.
and writes the BPE vocabulary as a vocab-only GGUF (tokenizer.ggml.model = "llama": tokens,
scores, token types, special ids; written with the `gguf` package) for the native SPM path:
  spm/bpe_vocab.gguf

Reference ids come from the Python `sentencepiece` package (the reference implementation).
Special tokens written in the text (control and unknown pieces: "<s>", "</s>", "<unk>",
"<ctrl>") are split out first, leftmost-longest, as Hugging Face's converted Llama tokenizers do;
each text segment in between is encoded by sentencepiece (which gives each its dummy prefix).
Decoding: runs of ordinary ids through sentencepiece, special ids as their text.

Usage: python3 tests/reference/tokenizer_sentencepiece.py
Needs: spm_train on PATH; pip install sentencepiece==0.1.99 gguf
The Python package is pinned to 0.1.99, the release closest to Debian 12's libsentencepiece
0.1.97 (checked: both give the same ids on every fixture string); 0.2.x breaks ties between
equally scored unigram segmentations of repeated characters differently.
"""
import json
import os
import subprocess
import sys
import tempfile

# sentencepiece 0.1.99's generated protobuf module predates protobuf 4's C++ descriptors.
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")

import gguf  # noqa: E402
import sentencepiece as spm  # noqa: E402
from sentencepiece import sentencepiece_model_pb2 as model_pb2  # noqa: E402

sys.path.insert(0, os.path.dirname(__file__))
from tokenizer_strings import all_strings, training_corpus  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer", "spm")

COMMON = ["--num_threads=1", "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1",
          "--max_sentence_length=100000", "--minloglevel=2"]
MODELS = {
    "bpe": ["--model_type=bpe", "--vocab_size=1000", "--byte_fallback=true",
            "--split_digits=true", "--normalization_rule_name=identity",
            "--remove_extra_whitespaces=false", "--add_dummy_prefix=true",
            "--allow_whitespace_only_pieces=true", "--character_coverage=0.99",
            "--user_defined_symbols=<tool>", "--control_symbols=<ctrl>"],
    "unigram": ["--model_type=unigram", "--vocab_size=600", "--character_coverage=0.995"],
}


def train(name, corpus_path):
    prefix = os.path.join(OUT, name)
    subprocess.run(["spm_train", f"--input={corpus_path}", f"--model_prefix={prefix}"] + COMMON +
                   MODELS[name], check=True)
    os.remove(prefix + ".vocab")
    return prefix + ".model"


def special_pieces(sp):
    return [sp.id_to_piece(i) for i in range(sp.get_piece_size())
            if sp.is_control(i) or sp.is_unknown(i)]


def split_specials(text, specials):
    """Leftmost-longest split on the special pieces: [(segment, is_special)]."""
    out, start, pos = [], 0, 0
    while pos < len(text):
        match = max((s for s in specials if text.startswith(s, pos)), key=len, default=None)
        if match is None:
            pos += 1
            continue
        if start < pos:
            out.append((text[start:pos], False))
        out.append((match, True))
        pos += len(match)
        start = pos
    if start < len(text):
        out.append((text[start:], False))
    return out


def encode(sp, text):
    ids = []
    for segment, special in split_specials(text, special_pieces(sp)):
        ids += [sp.piece_to_id(segment)] if special else sp.encode(segment)
    return ids


def decode(sp, ids, skip_special):
    out, run = "", []
    for i in ids:
        if sp.is_control(i) or sp.is_unknown(i):
            if skip_special:
                continue
            out += sp.decode(run) + sp.id_to_piece(i)
            run = []
        else:
            run.append(i)
    return out + sp.decode(run)


def write_cases(name, sp):
    cases = []
    for text in all_strings():
        ids = encode(sp, text)
        cases.append({"text": text, "ids": ids, "ids_with_special": [sp.bos_id()] + ids,
                      "decoded": decode(sp, ids, False),
                      "decoded_skip_special": decode(sp, ids, True)})
    with open(os.path.join(OUT, f"{name}_cases.json"), "w", encoding="utf-8") as f:
        json.dump({"generator": "tests/reference/tokenizer_sentencepiece.py",
                   "sentencepiece_version": spm.__version__, "cases": cases}, f,
                  ensure_ascii=True, separators=(",", ":"))
    print(f"{name}: vocab {sp.get_piece_size()}, {len(cases)} cases")


def write_gguf(model_path, gguf_path):
    proto = model_pb2.ModelProto()
    with open(model_path, "rb") as f:
        proto.ParseFromString(f.read())
    # sentencepiece piece types map one to one onto llama.cpp's token types.
    types = {proto.SentencePiece.NORMAL: 1, proto.SentencePiece.UNKNOWN: 2,
             proto.SentencePiece.CONTROL: 3, proto.SentencePiece.USER_DEFINED: 4,
             proto.SentencePiece.UNUSED: 5, proto.SentencePiece.BYTE: 6}
    writer = gguf.GGUFWriter(gguf_path, "llama")
    writer.add_tokenizer_model("llama")
    writer.add_token_list([p.piece for p in proto.pieces])
    writer.add_token_scores([p.score for p in proto.pieces])
    writer.add_token_types([types[p.type] for p in proto.pieces])
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)
    writer.add_unk_token_id(0)
    writer.add_add_bos_token(True)
    writer.add_add_eos_token(False)
    writer.add_bool("tokenizer.ggml.add_space_prefix", True)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def main():
    assert spm.__version__ == "0.1.99", f"pin sentencepiece==0.1.99 (found {spm.__version__})"
    os.makedirs(OUT, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        for line in training_corpus():
            # spm_train reads one sentence per line.
            f.write(line.replace("\n", " ").replace("\r", " ") + "\n")
        corpus_path = f.name
    try:
        for name in MODELS:
            path = train(name, corpus_path)
            write_cases(name, spm.SentencePieceProcessor(model_file=path))
        write_gguf(os.path.join(OUT, "bpe.model"), os.path.join(OUT, "bpe_vocab.gguf"))
    finally:
        os.remove(corpus_path)


if __name__ == "__main__":
    main()
