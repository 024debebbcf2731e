#!/usr/bin/env python3
"""exllamav2 0.3.2's own Q8/Q6/Q4 KV caches on the SmolLM2 fp16 folder: perplexity and KL
divergence on held-out text, the figures Hearth's `hearth-cli kld --cache q8|q6|q4` reports.

  exl2_cache_eval.py --fp16 DIR --out FILE.json [--text FILE] [--ids IDS.json] [--ctx 512]
                     [--stride 256]

Hearth's sliding windows (exl2_smollm2_reference.eval_windows). The reference is exllamav2's
forward over each whole window without a cache. Each cache type then runs every window token by
token through a fresh cache (its own --eval_token way of measuring caches): every position reads
all earlier ones back from the cache, as in decoding. (exllamav2 attends to a forward pass's own
new tokens in full precision and quantizes them as it stores them; Hearth stores first and reads
every position back, its own included, so its figures are if anything pessimistic beside these.)
Runs on the GPU machine (tests/gpu/exl2_reference_job.sh, stage "cache").
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exl2_common import prepare_attention  # noqa: E402
from exl2_smollm2_reference import (eval_ids, eval_windows, load_exl2_model,  # noqa: E402
                                    model_log_probs, score)


def cached_log_probs(model, cache, vocab, ids, windows):
    """Per window: log-probabilities of the scored rows, one token per forward pass."""
    import torch
    out = []
    for begin, end, first in windows:
        cache.current_seq_len = 0
        rows = []
        with torch.inference_mode():
            for j in range(begin, end - 1):
                logits = model.forward(torch.tensor([[ids[j]]], dtype=torch.long), cache)
                if j - begin >= first:
                    rows.append(torch.log_softmax(logits[0, -1, :vocab].float(), dim=-1))
        out.append(torch.stack(rows).cuda())
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fp16", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--text", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                   "../../resources/calibration/heldout.txt"))
    ap.add_argument("--ids", help="JSON list of the text's token ids (hearth-cli tokenize)")
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--stride", type=int, default=256)
    ap.add_argument("--max-tokens", type=int, default=0)
    args = ap.parse_args()
    prepare_attention("matmul")
    import torch
    from exllamav2 import (ExLlamaV2Cache, ExLlamaV2Cache_Q4, ExLlamaV2Cache_Q6,
                           ExLlamaV2Cache_Q8)
    from exllamav2.version import __version__ as exl2_version

    ids, info = eval_ids(args)
    windows = eval_windows(len(ids), args.ctx, args.stride)
    config, model = load_exl2_model(args.fp16, "matmul", args.ctx)
    vocab = config.vocab_size
    ref = model_log_probs(model, vocab, ids, windows)
    result = {"generator": "tests/reference/exl2_cache_eval.py", "exllamav2": exl2_version,
              "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "text": info,
              "ctx": args.ctx, "stride": args.stride,
              "no_cache": score(ref, ref, ids, windows), "caches": {}}
    for name, cls in (("fp16", ExLlamaV2Cache), ("q8", ExLlamaV2Cache_Q8),
                      ("q6", ExLlamaV2Cache_Q6), ("q4", ExLlamaV2Cache_Q4)):
        t0 = time.time()
        cache = cls(model, max_seq_len=args.ctx, batch_size=1)
        r = score(cached_log_probs(model, cache, vocab, ids, windows), ref, ids, windows)
        r["seconds"] = round(time.time() - t0, 2)
        del cache
        result["caches"][name] = r
        print("exllamav2 %s cache: ppl %.4f, KL %.6f, top-1 %.4f" %
              (name, r["perplexity"], r["kl_mean"], r["top1_agreement"]), flush=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print("wrote", args.out)


if __name__ == "__main__":
    main()
