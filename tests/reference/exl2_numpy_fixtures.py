#!/usr/bin/env python3
"""EXL2 layer fixtures written by an independent numpy implementation of exllamav2's packer,
with the expected dequantized fp16 matrices.

This is the stand-in until exllamav2's own packer has run (tests/reference/exl2_make_fixtures.py
needs a GPU; its fixtures use the same manifest format and the same C++ test reads both). It
follows docs/FORMATS.md §1 and exllamav2's conversion/adaptivegptq.py:

* groups per width as AdaptiveGPTQ.configure does (g_b = ceil(min(K·p, remaining) / gs_b));
* pack(): q_groups = (bits, first packed row), packed rows per group = rows·b/32 (ceil for the
  last group), columns padded to a multiple of 32 with the code 2^(b-1) and the scale nibble 0xF
  (the "value − 1" wrap of pack_rows_4), q_invperm = argsort(perm) as int32;
* pack_columns: each column of a group is a little-endian bitstream (§1.4);
* pack_rows_4: 8 nibbles (qs − 1) per word, column n at bits 4·(n % 8) (§1.5).

Codes and scale codes are random (valid) values: the quantizer's choice of codes does not change
how they are stored. The expected matrix is §1.9's reference dequantizer run on the packed tensors
(fp16 rounding at the same points as exllamav2: mx = fp16(q_scale_max / 256), scale =
fp16(fp16((nib+1)^2) · mx), w = fp16((q − 2^(b−1)) · scale), rows scattered back through q_perm).

The first case is the worked example of §1.2.5 (K = 2048, group sizes [32, 64, 32, 128, 64, 64],
bits [8, 6, 5, 4, 3, 2], proportions [.05, .1, .15, .2, .25, .25]): the script checks that it yields
35 groups, Q = 262 and the q_groups prefix printed there.

Writes tests/fixtures/quant/exl2_numpy/{manifest.json, *.safetensors}.
Run: python3 tests/reference/exl2_numpy_fixtures.py
"""
import json
import math
import os
import sys

import numpy as np
from safetensors.numpy import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "quant",
                   "exl2_numpy")


def configure(k, bits, props, group_size):
    """AdaptiveGPTQ.configure: list of (bits, rows) per group, in order."""
    groups = []
    remaining = k
    row = 0
    for b, p in zip(bits, props):
        gs = group_size[b]
        g = math.ceil(min(k * p, remaining) / gs)
        remaining -= g * gs
        for _ in range(g):
            rows = min(gs, k - row)
            if rows <= 0:
                break
            groups.append((b, rows))
            row += rows
    assert remaining <= 0 and row == k, (remaining, row, k)
    return groups


def pack_column_bits(codes, b):
    """codes: [R, N] ints of one group -> [ceil(R*b/32), N] uint32, little-endian stream down
    each column (cuda/pack_tensor.cu pack_columns_kernel)."""
    r, n = codes.shape
    qrows = (r * b + 31) // 32
    out = np.zeros((qrows, n), dtype=np.uint64)
    for j in range(r):
        off = j * b
        wi, sh = off // 32, off % 32
        v = codes[j].astype(np.uint64)
        out[wi] |= (v << np.uint64(sh)) & np.uint64(0xFFFFFFFF)
        if sh + b > 32:
            out[wi + 1] |= v >> np.uint64(32 - sh)
    return out.astype(np.uint32)


def pack_rows_4(qs):
    """qs: [G, N] ints 1..16 (0 for padding) -> [G, N/8] uint32 of (qs − 1) nibbles."""
    g, n = qs.shape
    nib = ((qs.astype(np.int64) - 1) & 0xF).astype(np.uint32)
    out = np.zeros((g, n // 8), dtype=np.uint32)
    for i in range(8):
        out |= nib[:, i::8] << np.uint32(4 * i)
    return out


def bits_at(words, b, j):
    off = j * b
    wi, sh = off // 32, off % 32
    v = int(words[wi]) >> sh
    if sh + b > 32:
        v |= int(words[wi + 1]) << (32 - sh)
    return v & ((1 << b) - 1)


def dequant_exl2(q_weight, q_scale, q_scale_max, q_groups, q_invperm, k):
    """FORMATS.md §1.9, literally (with the last group clipped to the K rows that exist)."""
    perm = np.argsort(q_invperm, kind="stable")
    qn, n = q_weight.shape
    g_count = q_scale.shape[0]
    groups = q_groups.astype(np.uint16).astype(np.int64)
    wst = np.zeros((k, n), dtype=np.float16)
    row_base = 0
    for g in range(g_count):
        b = int(groups[2 * g])
        r0 = int(groups[2 * g + 1])
        r1 = int(groups[2 * (g + 1) + 1]) if g + 1 < g_count else qn
        rows = min((r1 - r0) * 32 // b, k - row_base)
        mx = np.float16(np.float32(q_scale_max[g]) * np.float32(1.0 / 256.0))
        for c in range(n):
            nib = (int(q_scale[g, c // 8]) >> (4 * (c % 8))) & 15
            s = np.float16(np.float32(np.float16((nib + 1) ** 2)) * np.float32(mx))
            col = q_weight[r0:r1, c]
            for j in range(rows):
                q = bits_at(col, b, j)
                wst[row_base + j, c] = np.float16(np.float32(q - 2 ** (b - 1)) * np.float32(s))
        row_base += rows
    w = np.zeros((k, n), dtype=np.float16)
    w[perm, :] = wst
    return w  # [K, N]


def make_case(rng, name, k, n, bits, props, group_size, bias=False, note=""):
    groups = configure(k, bits, props, group_size)
    n_pad = (n + 31) // 32 * 32
    perm = rng.permutation(k)
    packed = []
    q_groups = []
    qs_rows = []
    out_row = 0
    for (b, rows) in groups:
        codes = rng.integers(0, 2 ** b, size=(rows, n_pad))
        codes[:, n:] = 2 ** (b - 1)  # padding columns decode to 0
        p = pack_column_bits(codes, b)
        packed.append(p)
        q_groups += [b, out_row]
        out_row += p.shape[0]
        qs = rng.integers(1, 17, size=(n_pad,))
        qs[n:] = 0  # -> nibble 0xF after the "value − 1" wrap
        qs_rows.append(qs)
    q_weight = np.concatenate(packed, axis=0).astype(np.uint32)
    q_scale = pack_rows_4(np.stack(qs_rows))
    q_scale_max = rng.uniform(0.002, 0.05, size=(len(groups),)).astype(np.float16)
    q_invperm = np.argsort(perm).astype(np.int32)
    q_groups = np.array(q_groups, dtype=np.int16)
    w = dequant_exl2(q_weight, q_scale, q_scale_max, q_groups, q_invperm, k)
    tensors = {
        "layer.q_weight": q_weight.view(np.int32),
        "layer.q_scale": q_scale.view(np.int32),
        "layer.q_scale_max": q_scale_max,
        "layer.q_groups": q_groups,
        "layer.q_invperm": q_invperm,
        "expected": np.ascontiguousarray(w[:, :n].T),  # [N, K], nn.Linear order
    }
    if bias:
        tensors["layer.bias"] = rng.uniform(-0.1, 0.1, size=(n_pad,)).astype(np.float16)
    save_file(tensors, os.path.join(OUT, name + ".safetensors"))
    return {
        "name": name,
        "format": "exl2",
        "file": name + ".safetensors",
        "prefix": "layer",
        "config": None,
        "in_features": k,
        "out_features": n,
        "padded_out_features": n_pad,
        "bits": sorted({b for b, _ in groups}, reverse=True),
        "groups": len(groups),
        "packed_rows": int(q_weight.shape[0]),
        "q_groups": [int(x) for x in q_groups.astype(np.uint16)],
        "note": note,
    }


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(31337)
    cases = []
    # §1.2.5 worked example.
    gs = {8: 32, 6: 64, 5: 32, 4: 128, 3: 64, 2: 64}
    ex = make_case(rng, "spec_worked_example_mixed", 2048, 32, [8, 6, 5, 4, 3, 2],
                   [0.05, 0.1, 0.15, 0.2, 0.25, 0.25], gs,
                   note="docs/FORMATS.md §1.2.5: 35 groups, Q = 262")
    assert ex["groups"] == 35 and ex["packed_rows"] == 262, (ex["groups"], ex["packed_rows"])
    assert ex["q_groups"][:20] == [8, 0, 8, 8, 8, 16, 8, 24, 6, 32, 6, 44, 6, 56, 6, 68, 5, 80,
                                   5, 85], ex["q_groups"][:20]
    cases.append(ex)
    for b, g in [(2, 64), (3, 128), (4, 128), (5, 32), (6, 64), (8, 32)]:
        cases.append(make_case(rng, f"b{b}_g{g}", 384, 64, [b], [1.0], {b: g}))
    cases.append(make_case(rng, "mixed_8_6_5_4_3_2_bias", 1024, 32, [8, 6, 5, 4, 3, 2],
                           [0.1, 0.1, 0.2, 0.2, 0.2, 0.2],
                           {8: 32, 6: 32, 5: 64, 4: 64, 3: 128, 2: 128}, bias=True))
    cases.append(make_case(rng, "down_proj_6_3_2", 1024, 32, [6, 3, 2], [0.05, 0.2, 0.75],
                           {6: 32, 3: 64, 2: 64}, note="exllamav2 mlp row 0 down_proj mix"))
    cases.append(make_case(rng, "head_n200_padded", 256, 200, [8, 6], [0.15, 0.85],
                           {8: 128, 6: 128}, bias=True,
                           note="out_features 200 stored as 224 columns"))
    cases.append(make_case(rng, "k1056_short_last_group", 1056, 32, [4], [1.0], {4: 128},
                           note="last group holds 32 of 128 rows"))
    cases.append(make_case(rng, "k1000_not_multiple_of_32", 1000, 32, [5, 3], [0.1, 0.9],
                           {5: 32, 3: 64}, note="last 3-bit group: 40 rows in 4 packed rows"))
    cases.append(make_case(rng, "two_bit_16_row_groups", 128, 64, [4, 2], [0.25, 0.75],
                           {4: 32, 2: 16}, note="2-bit groups of 16 rows (allowed by the kernels)"))
    manifest = {
        "generator": "tests/reference/exl2_numpy_fixtures.py (numpy re-implementation of "
                     "exllamav2's packer; random valid codes)",
        "expected": "tensor 'expected' F16 [out_features, in_features]",
        "cases": cases,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(OUT, x)) for x in os.listdir(OUT))
    print(f"wrote {len(cases)} EXL2 cases, {total / 1024:.0f} KiB, to {OUT}")


if __name__ == "__main__":
    sys.exit(main())
