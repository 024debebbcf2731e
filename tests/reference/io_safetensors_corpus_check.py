#!/usr/bin/env python3
"""Checks Hearth's malformed-safetensors corpus against the reference implementation.

Every image that io_parser_tests rejects (SafetensorsMalformed.*) is written out with
  HEARTH_DUMP_CORPUS=/tmp/st-corpus build/tests/unit/io/io_parser_tests --gtest_filter='SafetensorsMalformed.*'
and this script loads each with the `safetensors` package (huggingface/safetensors, Rust core).
It prints the images the reference accepts: those are places where Hearth is stricter than the
reference, each of which must be a deliberate, documented choice.

Needs: pip install safetensors numpy
Run:   python3 tests/reference/io_safetensors_corpus_check.py /tmp/st-corpus
"""
import os
import sys

from safetensors import deserialize


def main():
    folder = sys.argv[1]
    accepted, rejected = [], 0
    for name in sorted(os.listdir(folder), key=lambda n: int(n.split("_")[0])):
        with open(os.path.join(folder, name), "rb") as f:
            data = f.read()
        try:
            deserialize(data)
            accepted.append(name)
        except Exception as e:  # the Rust core raises SafetensorError
            rejected += 1
    print(f"reference rejects {rejected} of {rejected + len(accepted)}")
    for name in accepted:
        print("reference ACCEPTS:", name)


if __name__ == "__main__":
    main()
