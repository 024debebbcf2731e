#!/usr/bin/env python3
"""Writes a GGUF of a real model shape with random block-quantized weights, for GPU benchmarks
(nothing is downloaded; the weights are noise): the metadata, tokenizer included, of a small
GGUF, the shape of Llama-3-8B, every linear (and the embedding table) of one GGML type, or
Q4_K_M's mix (Q4_K, with Q6_K for the output matrix and for attn_v and ffn_down in the layers
llama.cpp gives more bits), norms in F32. Blocks hold random codes and scales, the fp16 ones small
enough for stable activations.

    python3 tests/bench/make_synthetic_gguf.py --tokenizer-gguf SmolLM2.gguf --type Q4_0 \\
        --out llama3-8b-q4_0.gguf

Needs numpy and the `gguf` package (PyPI).
"""
import argparse

import numpy as np
import gguf

SHAPES = {
    "llama3-8b": dict(layers=32, hidden=4096, ffn=14336, heads=32, kv_heads=8, theta=500000.0,
                      context=8192),
    "smollm2-135m": dict(layers=30, hidden=576, ffn=1536, heads=9, kv_heads=3, theta=100000.0,
                         context=8192),
    # The smallest model that carries the tokenizer (a few MB with Q8_0): enough for
    # `server_bench --write-synthetic --tokenizer-gguf`, which takes only the vocabulary.
    "tiny": dict(layers=1, hidden=128, ffn=256, heads=2, kv_heads=1, theta=10000.0, context=8192),
}
# Byte offsets of each type's fp16 fields: its scale d, then (where it has one) the minimum or
# the K-quants' dmin; and the range of d, sized for weights of about ±0.1 with that type's codes
# and (K-quants) 6- or 8-bit sub-block scales.
TYPES = {
    "Q4_0": ((0,), (0.002, 0.02)),
    "Q5_0": ((0,), (0.002, 0.02)),
    "Q8_0": ((0,), (0.0002, 0.002)),
    "Q4_1": ((0, 2), (0.002, 0.02)),
    "Q5_1": ((0, 2), (0.002, 0.02)),
    "Q4_K": ((0, 2), (0.0001, 0.0005)),
    "Q5_K": ((0, 2), (0.00005, 0.0002)),
    "Q6_K": ((208,), (0.00005, 0.0002)),
    "Q2_K": ((80, 82), (0.001, 0.004)),
    "Q3_K": ((108,), (0.0005, 0.002)),
    "IQ4_NL": ((0,), (0.0002, 0.001)),
    "IQ4_XS": ((0,), (0.00001, 0.00005)),
}
MIXES = ("Q4_K_M",)


def random_blocks(rows, cols, type_name, rng):
    """rows × cols weights of `type_name` as raw block bytes, one row per output."""
    qtype = gguf.GGMLQuantizationType[type_name]
    fields, (lo, hi) = TYPES[type_name]
    block_elems, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    count = rows * cols // block_elems
    raw = rng.integers(0, 256, size=(count, block_bytes), dtype=np.uint8)
    d = rng.uniform(lo, hi, count)
    if not type_name.endswith("_K"):
        d *= rng.choice([-1.0, 1.0], count)
    raw[:, fields[0]:fields[0] + 2] = d.astype(np.float16).view(np.uint8).reshape(count, 2)
    if len(fields) > 1:  # a legacy minimum near minus half the range; a K-quant dmin like d
        second = -8.0 * np.abs(d) if not type_name.endswith("_K") else d
        raw[:, fields[1]:fields[1] + 2] = second.astype(np.float16).view(np.uint8).reshape(count, 2)
    return qtype, raw.reshape(rows, cols // block_elems * block_bytes)


def more_bits(layer, layers):
    """Whether Q4_K_M gives layer's attn_v and ffn_down Q6_K (llama.cpp's use_more_bits)."""
    return layer < layers // 8 or layer >= 7 * layers // 8 or (layer - layers // 8) % 3 == 2


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--tokenizer-gguf", required=True)
    p.add_argument("--shape", default="llama3-8b", choices=sorted(SHAPES))
    p.add_argument("--type", default="Q4_0", choices=sorted(TYPES) + list(MIXES))
    p.add_argument("--out", required=True)
    p.add_argument("--seed", type=int, default=1)
    a = p.parse_args()
    s = SHAPES[a.shape]
    rng = np.random.default_rng(a.seed)

    reader = gguf.GGUFReader(a.tokenizer_gguf)
    vocab = len(reader.fields["tokenizer.ggml.tokens"].data)
    w = gguf.GGUFWriter(a.out, "llama")
    for field in reader.fields.values():
        # The file's own framing, architecture and shape are written below.
        if field.name.startswith(("GGUF.", "general.architecture", "llama.")):
            continue
        sub = field.types[-1] if field.types[0] == gguf.GGUFValueType.ARRAY else None
        w.add_key_value(field.name, field.contents(), field.types[0], sub)
    head_dim = s["hidden"] // s["heads"]
    w.add_block_count(s["layers"])
    w.add_context_length(s["context"])
    w.add_embedding_length(s["hidden"])
    w.add_feed_forward_length(s["ffn"])
    w.add_head_count(s["heads"])
    w.add_head_count_kv(s["kv_heads"])
    w.add_rope_dimension_count(head_dim)
    w.add_rope_freq_base(s["theta"])
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(vocab)

    H, F, KV = s["hidden"], s["ffn"], s["kv_heads"] * head_dim

    def linear(name, out_features, in_features, wide=False):
        type_name = a.type if a.type not in MIXES else ("Q6_K" if wide else "Q4_K")
        qtype, raw = random_blocks(out_features, in_features, type_name, rng)
        w.add_tensor(name, raw, raw_dtype=qtype)

    ones = np.ones(H, dtype=np.float32)
    linear("token_embd.weight", vocab, H)
    for i in range(s["layers"]):
        b = f"blk.{i}."
        w.add_tensor(b + "attn_norm.weight", ones)
        linear(b + "attn_q.weight", H, H)
        linear(b + "attn_k.weight", KV, H)
        linear(b + "attn_v.weight", KV, H, more_bits(i, s["layers"]))
        linear(b + "attn_output.weight", H, H)
        w.add_tensor(b + "ffn_norm.weight", ones)
        linear(b + "ffn_gate.weight", F, H)
        linear(b + "ffn_up.weight", F, H)
        linear(b + "ffn_down.weight", H, F, more_bits(i, s["layers"]))
    w.add_tensor("output_norm.weight", ones)
    linear("output.weight", vocab, H, wide=True)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print(f"wrote {a.out}: {a.shape} {a.type}, vocab {vocab}")


if __name__ == "__main__":
    main()
