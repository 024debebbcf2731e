#!/usr/bin/env python3
"""Reference fixtures for engine/io's GGUF reader (tests/unit/io).

Writes, under tests/fixtures/io/:
  gguf_quant_blocks.json  random blocks of every tensor type Hearth imports, dequantized by
                          gguf-py (llama.cpp's own Python package: gguf.quants.dequantize).
  smollm2_gguf.json       per-tensor checksums of the real test model (SmolLM2-135M-Instruct
                          Q4_1): "gguf" as gguf-py dequantizes each tensor (GGUF names),
                          "hf" as Hugging Face transformers loads the file
                          (AutoModelForCausalLM.from_pretrained(dir, gguf_file=...): HF names,
                          HF shapes, q/k rows un-permuted), plus transformers' config.

Checksums are exact and order-sensitive: over the float32 bit patterns b[i] of a tensor
(row-major), bitsum = sum b[i] and wsum = sum b[i] * (i + 1), both mod 2^64.

Needs: pip install gguf numpy torch transformers
Run:   python3 tests/reference/io_gguf_reference.py [path/to/SmolLM2-135M-Instruct.Q4_1.gguf]
"""
import json
import os
import sys
import zlib

import numpy as np
import gguf
from gguf import GGMLQuantizationType as T

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "io")
DEFAULT_MODEL = os.path.join(
    os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
    "hearth", "models", "SmolLM2-135M-Instruct.Q4_1.gguf")


def checksums(values: np.ndarray) -> dict:
    flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    bits = flat.view(np.uint32).astype(np.uint64)
    weights = np.arange(1, flat.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        bitsum = int(bits.sum(dtype=np.uint64))
        wsum = int((bits * weights).sum(dtype=np.uint64))
    return {"bitsum": bitsum, "wsum": wsum, "sum": float(flat.astype(np.float64).sum())}


def samples(name: str, values: np.ndarray, count: int) -> dict:
    flat = np.ascontiguousarray(values, dtype=np.float32).reshape(-1)
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    idx = np.sort(rng.choice(flat.size, size=min(count, flat.size), replace=False))
    return {"idx": [int(i) for i in idx], "val": [float(flat[i]) for i in idx]}


# --- quant blocks --------------------------------------------------------------------------------

# Byte offsets of the fp16 scale fields in each block (ggml-common.h layouts); they get sane
# values (finite, with zero, subnormal and negative cases) instead of random bits.
FP16_FIELDS = {
    T.Q4_0: [0], T.Q4_1: [0, 2], T.Q5_0: [0], T.Q5_1: [0, 2], T.Q8_0: [0],
    T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208], T.Q2_K: [80, 82], T.Q3_K: [108],
    T.IQ4_NL: [0], T.IQ4_XS: [0],
}
BLOCKS = 4


def sane_halves(rng, n):
    v = (rng.standard_normal(n) * 0.05).astype(np.float16)
    special = np.array([0.0, 6e-8, -3e-5, -1.5, 1000.0, 2.0 ** -14], dtype=np.float16)
    v[: min(n, len(special))] = special[: min(n, len(special))]
    rng.shuffle(v)
    return v


def quant_blocks():
    rng = np.random.RandomState(1234)
    out = {}
    for qtype in [T.F32, T.F16, T.BF16, T.Q8_0, T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q4_K, T.Q5_K,
                  T.Q6_K, T.Q2_K, T.Q3_K, T.IQ4_NL, T.IQ4_XS]:
        block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
        if qtype == T.F32:
            raw = (rng.standard_normal(64) * 10).astype(np.float32)
            raw[:4] = [0.0, -0.0, np.inf, 1e-40]
            data = raw.view(np.uint8)
        elif qtype == T.F16:
            raw = (rng.standard_normal(64) * 10).astype(np.float16)
            raw[:4] = [0.0, -0.0, np.inf, 6e-8]
            data = raw.view(np.uint8)
        elif qtype == T.BF16:
            bits = rng.randint(0, 1 << 16, size=64).astype(np.uint16)
            bits[(bits & 0x7F80) == 0x7F80] &= 0xBFFF  # no inf/nan patterns
            data = bits.view(np.uint8)
        else:
            data = rng.randint(0, 256, size=(BLOCKS, block_bytes)).astype(np.uint8)
            for off in FP16_FIELDS[qtype]:
                halves = sane_halves(rng, BLOCKS)
                data[:, off:off + 2] = halves.view(np.uint8).reshape(BLOCKS, 2)
            data = data.reshape(-1)
        values = gguf.quants.dequantize(data, qtype).astype(np.float32).reshape(-1)
        out[qtype.name] = {
            "elements": int(values.size),
            "bytes": data.tobytes().hex(),
            "expected": values.tobytes().hex(),  # little-endian float32
        }
    return out


# --- the real model ------------------------------------------------------------------------------

def model_fixture(path):
    reader = gguf.GGUFReader(path)
    gguf_side = {}
    for t in reader.tensors:
        values = gguf.quants.dequantize(t.data, t.tensor_type).astype(np.float32)
        shape = [int(d) for d in reversed(t.shape.tolist())]  # row-major (HF order)
        values = values.reshape(shape)
        entry = {"type": t.tensor_type.name, "shape": shape}
        entry.update(checksums(values))
        entry.update(samples(t.name, values, 8))
        gguf_side[t.name] = entry

    import torch
    from transformers import AutoModelForCausalLM
    model = AutoModelForCausalLM.from_pretrained(os.path.dirname(path),
                                                 gguf_file=os.path.basename(path),
                                                 dtype=torch.float32)
    cfg = model.config
    state = model.state_dict()
    hf_side = {}
    for name, tensor in state.items():
        if name == "lm_head.weight" and cfg.tie_word_embeddings:
            assert torch.equal(tensor, state["model.embed_tokens.weight"])
            continue  # tied: the same tensor as the embedding
        values = tensor.detach().numpy().astype(np.float32)
        entry = {"shape": list(values.shape)}
        entry.update(checksums(values))
        entry.update(samples(name, values, 8))
        if name.endswith(("self_attn.q_proj.weight", "self_attn.k_proj.weight")) and (
                ".layers.0." in name or f".layers.{cfg.num_hidden_layers - 1}." in name):
            entry["row_sums"] = [float(s) for s in values.astype(np.float64).sum(axis=1)]
        hf_side[name] = entry
    rope = getattr(cfg, "rope_parameters", None) or {}
    config = {
        "num_hidden_layers": cfg.num_hidden_layers,
        "hidden_size": cfg.hidden_size,
        "intermediate_size": cfg.intermediate_size,
        "num_attention_heads": cfg.num_attention_heads,
        "num_key_value_heads": cfg.num_key_value_heads,
        "head_dim": cfg.head_dim,
        "vocab_size": cfg.vocab_size,
        "max_position_embeddings": cfg.max_position_embeddings,
        "rms_norm_eps": cfg.rms_norm_eps,
        "rope_theta": rope.get("rope_theta", getattr(cfg, "rope_theta", None)),
        "rope_type": rope.get("rope_type", "default"),
        "tie_word_embeddings": cfg.tie_word_embeddings,
        "bos_token_id": cfg.bos_token_id,
        "eos_token_id": cfg.eos_token_id,
        "pad_token_id": cfg.pad_token_id,
        "name": cfg.to_dict().get("_model_name_or_path", ""),  # general.name
    }
    return {
        "model_file": os.path.basename(path),
        "model_bytes": os.path.getsize(path),
        "gguf": gguf_side,
        "hf": hf_side,
        "config": config,
        "generator": {"gguf": gguf.__version__ if hasattr(gguf, "__version__") else "?",
                      "transformers": __import__("transformers").__version__,
                      "torch": torch.__version__},
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "gguf_quant_blocks.json"), "w") as f:
        json.dump(quant_blocks(), f, indent=1)
    model = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_MODEL
    with open(os.path.join(OUT, "smollm2_gguf.json"), "w") as f:
        json.dump(model_fixture(model), f, indent=None, separators=(",", ":"))
    print("wrote", OUT)


if __name__ == "__main__":
    main()
