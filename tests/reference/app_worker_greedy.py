#!/usr/bin/env python3
"""Expected texts for the desktop app's engine-worker test.

Takes the greedy continuations that Hugging Face transformers produced for SmolLM2-135M-Instruct
(tests/fixtures/model/hf_parity.json, written by hf_parity.py), cuts each before its first
special token (ids 0-2: <|endoftext|>, <|im_start|>, <|im_end|>), and decodes it with the Hugging
Face tokenizer of the same GGUF file. The C++ test streams the same prompts through EngineWorker
(greedy) and compares the streamed text with these strings.

    pip install transformers gguf
    python3 tests/reference/app_worker_greedy.py [--model PATH.gguf]
"""
import argparse
import json
import os

from transformers import AutoTokenizer

SPECIAL_IDS = {0, 1, 2}


def main():
    ap = argparse.ArgumentParser()
    default_model = os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
        "hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--parity", default="tests/fixtures/model/hf_parity.json")
    ap.add_argument("--out", default="tests/fixtures/app/worker_greedy.json")
    args = ap.parse_args()

    folder, name = os.path.split(os.path.abspath(args.model))
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    parity = json.load(open(args.parity))
    cases = []
    for case in parity["cases"]:
        ids = case["greedy_ids"]
        cut = next((i for i, t in enumerate(ids) if t in SPECIAL_IDS), len(ids))
        text = tokenizer.decode(ids[:cut])
        # Too short to show streaming, or ending inside a UTF-8 character (which a stream never
        # emits half of).
        if cut < 8 or "\ufffd" in text:
            continue
        cases.append({"prompt": case["text"], "max_tokens": cut, "text": text})
    json.dump({"model": parity["model"], "reference": parity["reference"], "cases": cases},
              open(args.out, "w"), ensure_ascii=False, indent=1)
    print(f"{len(cases)} cases -> {args.out}")


if __name__ == "__main__":
    main()
