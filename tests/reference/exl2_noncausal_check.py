#!/usr/bin/env python3
"""CPU check of a diagnosis: were exllamav2's logits (exl2_smollm2_<bpw>.json from
exl2_smollm2_reference.py reference) computed with bidirectional attention?

transformers (fp32, CPU) runs the fp16 folder (exl2_smollm2_reference.py gguf-to-hf) twice on each
prompt of the JSON: causally, and with an all-zero 4-D attention mask (every position attends to
every other, as exllamav2 0.3.2's SDPA branch does without flash-attn; see exl2_common.py). If
exllamav2's logits sit much closer to the bidirectional run, its forward pass was not causal.

    python3 tests/reference/exl2_noncausal_check.py --hf DIR JSON [JSON ...]

On the first GPU run's JSONs (2026-11-26) this printed, mean |Δlogit| on exllamav2's top-20 + 32
probe tokens, causal vs bidirectional: 2.5 bpw 7.20 vs 6.01, 4.0 bpw 6.99 vs 2.34, 6.0 bpw 6.94 vs
1.61 (argmax agreement 58 vs 117 of 144 at 6.0), and the bidirectional greedy continuation of
"The capital of France is" was token 79 repeated, exactly exllamav2's at 6.0 bpw.
"""
import argparse
import json

import torch
from transformers import AutoModelForCausalLM


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf", required=True, help="the fp16 folder the checkpoints were made from")
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    try:
        model = AutoModelForCausalLM.from_pretrained(args.hf, dtype=torch.float32, attn_implementation="eager")
    except TypeError:
        model = AutoModelForCausalLM.from_pretrained(args.hf, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()

    def logits(ids, bidirectional):
        t = len(ids)
        mask = torch.zeros(1, 1, t, t) if bidirectional else None
        with torch.no_grad():
            return model(torch.tensor([ids]), attention_mask=mask).logits[0]

    for path in args.json:
        ref = json.load(open(path))
        probe = ref["probe_ids"]
        for bidirectional in (False, True):
            total, count, same, positions, first = 0.0, 0, 0, 0, 0
            for c in ref["cases"]:
                lg = logits(c["prompt_ids"], bidirectional)
                for p, pos in enumerate(c["positions"]):
                    ex = torch.tensor(pos["top_logits"] + pos["probe_logits"])
                    ours = lg[p][pos["top_ids"] + probe]
                    total += float((ours - ex).abs().sum())
                    count += len(ex)
                    same += int(int(lg[p].argmax()) == pos["top_ids"][0])
                    positions += 1
                first += int(int(lg[-1].argmax()) == c["greedy_ids"][0])
            print("%s (%s bpw) vs transformers fp32 %-13s: mean |dlogit| %.3f, argmax agree %d/%d, "
                  "first greedy token agree %d/%d" % (path, ref.get("bpw"), "bidirectional" if bidirectional
                                                       else "causal", total / count, same, positions,
                                                       first, len(ref["cases"])))


if __name__ == "__main__":
    main()
