#!/usr/bin/env python3
"""Round-to-nearest baselines for Hearth's quantizer, measured outside Hearth with transformers.

GPTQ and EXL2 should beat plain rounding of the same weights on the same grid. This script
rounds every decoder linear of SmolLM2-135M-Instruct (the head stays fp32) to a grid and
reports perplexity, mean / 99.9th-percentile KL divergence against the unquantized model and
top-1 agreement on Hearth's held-out text (resources/calibration/heldout.txt), scored the way
`hearth-cli ppl` / `kld` score it (windows of --ctx tokens advanced by ctx/2, each position
scored once). The unquantized perplexity it prints must equal what Hearth's evaluation reports
as "source" (30.022 for the default model), which checks that both score the same tokens.

Grids: "sym" is GPTQ's symmetric grid (zero (2^b)/2, scale 2·max|w|/(2^b − 1) per group of
input rows), "minmax" the asymmetric one, "exl2" exllamav2's 4-bit square-law scale codes under
a per-group fp16 maximum (docs/FORMATS.md §1.5), with rows ordered by descending norm.

  pip install torch transformers gguf numpy
  python3 tests/reference/quant_rtn_baseline.py [--model PATH.gguf] [--grids sym:4:128,exl2:6:128]
"""
import argparse
import math
import os

import numpy as np
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def scored_log_probs(model, ids, ctx):
    """(log-probs of the position before, target id) for every scored target."""
    out, prev_end, begin, n = [], 0, 0, len(ids)
    stride = max(1, ctx // 2)
    while begin < n:
        end = min(begin + ctx, n)
        with torch.no_grad():
            logits = model(torch.tensor([ids[begin:end]])).logits[0].float()
        lp = torch.log_softmax(logits, -1)
        for t in range(max(prev_end, begin + 1), end):
            out.append((lp[t - 1 - begin], ids[t]))
        prev_end = end
        if end == n:
            break
        begin += stride
    return out


def compare(ref, cur):
    nll = -sum(float(lp[t]) for lp, t in cur) / len(cur)
    kl = [float((r.exp() * (r - c)).sum()) for (r, _), (c, _) in zip(ref, cur)]
    top = np.mean([int(r.argmax() == c.argmax()) for (r, _), (c, _) in zip(ref, cur)])
    return math.exp(nll), float(np.mean(kl)), float(np.percentile(kl, 99.9)), float(top)


def round_sym(w, bits, group):
    """w: [N, K] (nn.Linear); groups run along K."""
    out, maxq = np.empty_like(w), 2**bits - 1
    zero = (maxq + 1) / 2
    for c in range(0, w.shape[1], group):
        x = w[:, c:c + group]
        s = 2 * np.abs(x).max(1, keepdims=True) / maxq
        s[s == 0] = 1
        out[:, c:c + group] = (np.clip(np.round(x / s) + zero, 0, maxq) - zero) * s
    return out


def round_minmax(w, bits, group):
    out, maxq = np.empty_like(w), 2**bits - 1
    for c in range(0, w.shape[1], group):
        x = w[:, c:c + group]
        lo = np.minimum(x.min(1, keepdims=True), 0)
        hi = np.maximum(x.max(1, keepdims=True), 0)
        s = (hi - lo) / maxq
        s[s == 0] = 1
        z = np.round(-lo / s)
        out[:, c:c + group] = (np.clip(np.round(x / s) + z, 0, maxq) - z) * s
    return out


def round_exl2(w, bits, group):
    wt = w.T.astype(np.float32)  # [K, N]
    perm = np.argsort(-np.linalg.norm(wt, axis=1), kind="stable")
    wp, deq = wt[perm], np.zeros_like(wt)
    maxq, qzero = 2**bits - 1, 2**(bits - 1)
    for r in range(0, wt.shape[0], group):
        x = wp[r:r + group]
        base = (np.abs(x).max(axis=0) + 1e-12) / (maxq / 2)
        smax = base.max()
        qs = np.clip(np.round(16 * np.sqrt(base / smax)), 1, 16)
        mx = np.float32(np.float16(np.float32(np.float16(smax)) / 256))
        scale = (np.float16(qs * qs).astype(np.float32) * mx).astype(np.float16).astype(np.float32)
        deq[r:r + group] = (np.clip(np.rint(x / scale) + qzero, 0, maxq) - qzero) * scale
    out = np.zeros_like(wt)
    out[perm] = deq
    return out.T


GRIDS = {"sym": round_sym, "minmax": round_minmax, "exl2": round_exl2}


def main():
    default_model = os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
        "hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--text", default=os.path.join(HERE, "../../resources/calibration/heldout.txt"))
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--max-tokens", type=int, default=16384)
    ap.add_argument("--grids", default="sym:4:128,minmax:4:128,exl2:4:128,exl2:3:64,exl2:6:128")
    args = ap.parse_args()

    torch.set_num_threads(max(1, os.cpu_count() or 1))
    folder, name = os.path.split(os.path.abspath(args.model))
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    with open(args.text, encoding="utf-8") as f:
        ids = tok(f.read(), add_special_tokens=False)["input_ids"][:args.max_tokens]

    ref = scored_log_probs(model, ids, args.ctx)
    print(f"unquantized: ppl {compare(ref, ref)[0]:.4f} over {len(ref)} scored tokens")
    original = {k: v.clone() for k, v in model.state_dict().items()}
    for spec in args.grids.split(","):
        grid, bits, group = spec.split(":")
        fn = GRIDS[grid]
        state = {k: v.clone() for k, v in original.items()}
        for k, v in state.items():
            if k.endswith(".weight") and any(f".{name}." in k for name in LINEARS):
                state[k] = torch.from_numpy(fn(v.numpy(), int(bits), int(group)).astype(np.float32))
        model.load_state_dict(state)
        ppl, kl, kl999, top = compare(ref, scored_log_probs(model, ids, args.ctx))
        print(f"round-to-nearest {spec:14s} ppl {ppl:8.3f}  KL {kl:.4f}  p99.9 {kl999:6.3f}  "
              f"top-1 {100 * top:5.2f} %", flush=True)


if __name__ == "__main__":
    main()
