#!/usr/bin/env python3
"""A whole EXL2 checkpoint of SmolLM2-135M-Instruct written by the numpy EXL2 packer, with
transformers' logits on the same (dequantized) weights: a CPU-only end-to-end check of Hearth's
EXL2 path (loader, tied model with a quantized lm_head, forward pass) until exllamav2's own
checkpoints exist (tests/reference/exl2_smollm2_reference.py, GPU).

Quantization here is round-to-nearest with exllamav2's scale rules (4-bit square-law scale codes
relative to a per-group fp16 maximum, act-order by descending column norm), group layout and
packing as exllamav2's pack() (tests/reference/exl2_numpy_fixtures.py). The reference logits come
from transformers' LlamaForCausalLM in fp32 on the dequantized weights (docs/FORMATS.md §1.9),
in the JSON format of exl2_smollm2_reference.py, so tests/gpu/quant_exl2_smollm2_test.cpp reads
both.

  python3 tests/reference/exl2_numpy_smollm2.py --hf HF_FP16_DIR --out DIR [--bpw 4.0]
  (HF_FP16_DIR: exl2_smollm2_reference.py gguf-to-hf). Writes DIR/<bpw>/ and
  DIR/exl2_smollm2_<bpw>.json; then HEARTH_EXL2_SMOLLM2=DIR runs the C++ test.
"""
import argparse
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exl2_numpy_fixtures import configure, pack_column_bits, pack_rows_4  # noqa: E402
from exl2_smollm2_reference import PROMPTS, reference_case  # noqa: E402

RECIPES = {  # (bits, proportion) by descending bits, group sizes: exllamav2-like rows
    "2.5": ([(3, 0.4), (2, 0.6)], {3: 64, 2: 64}),
    "4.0": ([(4, 1.0)], {4: 128}),
    "6.0": ([(6, 1.0)], {6: 128}),
}
HEAD = ([(8, 0.15), (6, 0.85)], {8: 128, 6: 128})


def quantize_layer(w, parts, group_size):
    """w: [N, K] float32 (nn.Linear) -> tensors of an EXL2 layer and the dequantized [N, K]."""
    n, k = w.shape
    wt = w.T.astype(np.float32)  # [K, N]
    perm = np.argsort(-np.linalg.norm(wt, axis=1), kind="stable")  # stands in for diag(H)
    wp = wt[perm]
    bits = [b for b, _ in parts]
    props = [p for _, p in parts]
    groups = configure(k, bits, props, group_size)
    n_pad = (n + 31) // 32 * 32
    deq = np.zeros((k, n), dtype=np.float16)
    packed, q_groups, qs_rows, qsm = [], [], [], []
    row = 0
    out_row = 0
    for b, rows in groups:
        x = wp[row:row + rows]
        maxq = 2 ** b - 1
        qzero = 2 ** (b - 1)
        base = (np.abs(x).max(axis=0) + 1e-12) / (maxq / 2)
        smax = base.max()
        qs = np.clip(np.round(16 * np.sqrt(base / smax)), 1, 16).astype(np.int64)
        smax16 = np.float16(smax)
        mx = np.float16(np.float32(smax16) * np.float32(1 / 256))
        scale = (np.float32(1) * (qs * qs).astype(np.float16).astype(np.float32) *
                 np.float32(mx)).astype(np.float16).astype(np.float32)
        codes = np.clip(np.rint(x / scale) + qzero, 0, maxq).astype(np.int64)
        deq[row:row + rows] = ((codes - qzero).astype(np.float32) * scale).astype(np.float16)
        c_pad = np.full((rows, n_pad), qzero, dtype=np.int64)
        c_pad[:, :n] = codes
        p = pack_column_bits(c_pad, b)
        packed.append(p)
        q_groups += [b, out_row]
        out_row += p.shape[0]
        qs_pad = np.zeros(n_pad, dtype=np.int64)
        qs_pad[:n] = qs
        qs_rows.append(qs_pad)
        qsm.append(smax16)
        row += rows
    w_deq = np.zeros((k, n), dtype=np.float16)
    w_deq[perm] = deq
    tensors = {
        "q_weight": np.concatenate(packed).astype(np.uint32).view(np.int32),
        "q_scale": pack_rows_4(np.stack(qs_rows)).view(np.int32),
        "q_scale_max": np.array(qsm, dtype=np.float16),
        "q_groups": np.array(q_groups, dtype=np.int16),
        "q_invperm": np.argsort(perm).astype(np.int32),
    }
    return tensors, w_deq.T  # [N, K]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hf", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--bpw", default="4.0")
    args = ap.parse_args()
    import torch
    from safetensors.numpy import save_file
    from safetensors.torch import load_file
    from transformers import LlamaConfig, LlamaForCausalLM

    src = load_file(os.path.join(args.hf, "model.safetensors"))
    cfg = json.load(open(os.path.join(args.hf, "config.json")))
    for bpw in args.bpw.split(","):
        parts, gsz = RECIPES[bpw]
        folder = os.path.join(args.out, bpw)
        os.makedirs(folder, exist_ok=True)
        out, dense = {}, {}
        for name, t in src.items():
            a = t.float().numpy()
            if name.endswith("_proj.weight"):
                prefix = name[: -len(".weight")]
                tensors, deq = quantize_layer(a, parts, gsz)
                for key, value in tensors.items():
                    out[prefix + "." + key] = value
                dense[name] = deq
            else:
                out[name] = t.to(torch.float16).numpy()
                dense[name] = t.to(torch.float16).numpy()
        tensors, deq = quantize_layer(src["model.embed_tokens.weight"].float().numpy(), *HEAD)
        for key, value in tensors.items():
            out["lm_head." + key] = value
        dense["lm_head.weight"] = deq
        save_file(out, os.path.join(folder, "output.safetensors"))
        c = dict(cfg)
        c["quantization_config"] = {"quant_method": "exl2", "version": "numpy-rtn", "bits": float(bpw),
                                    "head_bits": 6, "calibration": "none (round to nearest)"}
        json.dump(c, open(os.path.join(folder, "config.json"), "w"), indent=2)
        for f in os.listdir(args.hf):
            if f.startswith("tokenizer") or f.endswith(".jinja") or f == "special_tokens_map.json":
                shutil.copy(os.path.join(args.hf, f), folder)

        # Reference: transformers, fp32, on exactly the dequantized weights.
        lc = LlamaConfig(**{k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype")})
        lc.tie_word_embeddings = False
        model = LlamaForCausalLM(lc).float().eval()
        state = {k: torch.from_numpy(v.astype(np.float32)) for k, v in dense.items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(args.hf)
        vocab = lc.vocab_size
        gen = torch.Generator().manual_seed(7)
        probe = sorted(set(torch.randint(0, vocab, (64,), generator=gen).tolist()))[:32]
        cases = []
        with torch.no_grad():
            for text in PROMPTS:
                ids = tok(text, add_special_tokens=False)["input_ids"]
                cases.append(reference_case(
                    text, ids, lambda seq: model(torch.tensor([seq])).logits[0], probe)[0])
        path = os.path.join(args.out, "exl2_smollm2_%s.json" % bpw)
        json.dump({"generator": "tests/reference/exl2_numpy_smollm2.py (transformers fp32)",
                   "bpw": float(bpw), "model_folder": bpw, "probe_ids": probe, "cases": cases},
                  open(path, "w"), separators=(",", ":"))
        print("wrote", folder, "and", path)


if __name__ == "__main__":
    main()
