#!/usr/bin/env python3
"""GPTQ layer fixtures for tests/unit/quant: packed exactly as AutoGPTQ packs them, with the
expected dequantized fp16 matrices.

Packing follows AutoGPTQ's own loops (auto_gptq/nn_modules/qlinear/qlinear_cuda_old.py, pack():
the 2/4/8-bit shift loops and the hand-written 3-bit "10 values + straddle" loop, `zeros -= 1`
before packing the zeros, the uint32 cast that turns a zero of 0 into 0xFFFFFFFF). Scales and
zeros come from AutoGPTQ's quantizer rules (auto_gptq/quantization/quantizer.py find_params:
sym → Z = 2^(b-1), asym → Z = round(-xmin/scale)); codes are rounded to nearest (the GPTQ error
feedback changes which codes are chosen, not how they are stored). g_idx follows gptq.py:
desc_act without static groups → g_idx[perm[i]] = i // group_size (non-monotone), otherwise
k // group_size. GPTQModel's v2 ("gptq_v2") layout stores Z itself.

The expected matrix of every case is computed from the packed words alone by an independent
reading of the reference dequantizer in docs/FORMATS.md (§2.6, and §2.5.3: scales become fp16
first):  W[k,n] = fp16((q[k,n] - z[g_idx[k],n]) * fp16(scales[g_idx[k],n])), z = stored + 1 for
v1. For undamaged cases the script also checks that this equals fp16((q - Z) * fp16(scale)) from
the unpacked codes, and it checks the symmetric zero words against the constants listed in §2.2.

Writes tests/fixtures/quant/gptq/{manifest.json, *.safetensors} (a few hundred KB in all).
Run: python3 tests/reference/quant_gptq_fixtures.py
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "quant", "gptq")


# ---- AutoGPTQ packing loops (qlinear_cuda_old.py pack), numpy uint32 ----

def pack_qweight(intweight, bits):
    """intweight: [K, N] uint32 codes -> qweight [K // 32 * bits, N] uint32 (AutoGPTQ loop)."""
    intweight = intweight.astype(np.uint32)
    qweight = np.zeros((intweight.shape[0] // 32 * bits, intweight.shape[1]), dtype=np.uint32)
    i = 0
    row = 0
    while row < qweight.shape[0]:
        if bits in [2, 4, 8]:
            for j in range(i, i + (32 // bits)):
                qweight[row] |= intweight[j] << np.uint32(bits * (j - i))
            i += 32 // bits
            row += 1
        elif bits == 3:
            for j in range(i, i + 10):
                qweight[row] |= intweight[j] << np.uint32(3 * (j - i))
            i += 10
            qweight[row] |= intweight[i] << np.uint32(30)
            row += 1
            qweight[row] |= (intweight[i] >> np.uint32(2)) & np.uint32(1)
            i += 1
            for j in range(i, i + 10):
                qweight[row] |= intweight[j] << np.uint32(3 * (j - i) + 1)
            i += 10
            qweight[row] |= intweight[i] << np.uint32(31)
            row += 1
            qweight[row] |= (intweight[i] >> np.uint32(1)) & np.uint32(0x3)
            i += 1
            for j in range(i, i + 10):
                qweight[row] |= intweight[j] << np.uint32(3 * (j - i) + 2)
            i += 10
            row += 1
        else:
            raise ValueError(bits)
    return qweight


def pack_qzeros(zeros, bits):
    """zeros: [G, N] int64 values already offset as stored (v1: Z - 1, may be -1) -> uint32."""
    zeros = zeros.astype(np.int64).astype(np.uint32)  # -1 -> 0xFFFFFFFF, as torch/numpy do
    qzeros = np.zeros((zeros.shape[0], zeros.shape[1] // 32 * bits), dtype=np.uint32)
    i = 0
    col = 0
    while col < qzeros.shape[1]:
        if bits in [2, 4, 8]:
            for j in range(i, i + (32 // bits)):
                qzeros[:, col] |= zeros[:, j] << np.uint32(bits * (j - i))
            i += 32 // bits
            col += 1
        elif bits == 3:
            for j in range(i, i + 10):
                qzeros[:, col] |= zeros[:, j] << np.uint32(3 * (j - i))
            i += 10
            qzeros[:, col] |= zeros[:, i] << np.uint32(30)
            col += 1
            qzeros[:, col] |= (zeros[:, i] >> np.uint32(2)) & np.uint32(1)
            i += 1
            for j in range(i, i + 10):
                qzeros[:, col] |= zeros[:, j] << np.uint32(3 * (j - i) + 1)
            i += 10
            qzeros[:, col] |= zeros[:, i] << np.uint32(31)
            col += 1
            qzeros[:, col] |= (zeros[:, i] >> np.uint32(1)) & np.uint32(0x3)
            i += 1
            for j in range(i, i + 10):
                qzeros[:, col] |= zeros[:, j] << np.uint32(3 * (j - i) + 2)
            i += 10
            col += 1
        else:
            raise ValueError(bits)
    return qzeros


# ---- the reference dequantizer of FORMATS.md §2.6, from the packed words only ----

def bits_at(words, b, j):
    off = j * b
    wi = off // 32
    sh = off % 32
    v = int(words[wi]) >> sh
    if sh + b > 32:
        v |= int(words[wi + 1]) << (32 - sh)
    return v & ((1 << b) - 1)


def dequant_gptq(qweight, qzeros, scales_f16, g_idx, b, v2):
    kp, n = qweight.shape
    k = kp * 32 // b
    q = np.zeros((k, n), dtype=np.int64)
    for c in range(n):
        col = qweight[:, c]
        for r in range(k):
            q[r, c] = bits_at(col, b, r)
    g = qzeros.shape[0]
    z = np.zeros((g, n), dtype=np.int64)
    for gi in range(g):
        for c in range(n):
            z[gi, c] = bits_at(qzeros[gi], b, c)
    if not v2:
        z += 1
    w = (q - z[g_idx, :]).astype(np.float32) * scales_f16[g_idx, :].astype(np.float32)
    return w.astype(np.float16), q  # [K, N]


SYM_WORDS = {  # FORMATS.md §2.2
    (4, "v1"): [0x77777777], (2, "v1"): [0x55555555], (8, "v1"): [0x7F7F7F7F],
    (3, "v1"): [0xdb6db6db, 0xb6db6db6, 0x6db6db6d],
    (4, "v2"): [0x88888888], (2, "v2"): [0xAAAAAAAA], (8, "v2"): [0x80808080],
    (3, "v2"): [0x24924924, 0x49249249, 0x92492492],
}


def find_params(x, bits, sym):
    """AutoGPTQ Quantizer.find_params (perchannel) over x: [rows, N] -> scale [N], zero [N]."""
    maxq = 2 ** bits - 1
    xmin = np.minimum(x.min(axis=0), 0)
    xmax = np.maximum(x.max(axis=0), 0)
    if sym:
        xmax = np.maximum(np.abs(xmin), xmax)
        tmp = xmin < 0
        xmin = np.where(tmp, -xmax, xmin)
    tmp = (xmin == 0) & (xmax == 0)
    xmin = np.where(tmp, -1, xmin)
    xmax = np.where(tmp, 1, xmax)
    scale = (xmax - xmin) / maxq
    if sym:
        zero = np.full_like(scale, (maxq + 1) / 2)
    else:
        zero = np.round(-xmin / scale)
    return scale.astype(np.float32), zero.astype(np.int64)


def make_case(rng, name, bits, k, n, group_size, desc_act=False, static_groups=False, sym=True,
              v2=False, scale_dtype="f16", write_g_idx=True, label="auto", force_zero_min=False,
              config_in="config", extra_note=""):
    maxq = 2 ** bits - 1
    w = rng.standard_normal((k, n)).astype(np.float32) * 0.02  # W^T: [K, N]
    if not sym:
        w += rng.uniform(-0.01, 0.03, size=(1, n)).astype(np.float32)  # off-centre columns
    gs = k if group_size == -1 else group_size
    if desc_act and not static_groups:
        perm = rng.permutation(k)  # stands in for argsort(diag(H), descending)
        g_idx = np.zeros(k, dtype=np.int32)
        g_idx[perm] = np.arange(k) // gs
    else:
        g_idx = (np.arange(k) // gs).astype(np.int32)
    groups = int(g_idx.max()) + 1
    scales = np.zeros((groups, n), dtype=np.float32)
    zeros = np.zeros((groups, n), dtype=np.int64)
    for g in range(groups):
        rows = w[g_idx == g]
        s, z = find_params(rows, bits, sym)
        scales[g] = s
        zeros[g] = z
    if force_zero_min:
        zeros[0, ::3] = 0  # asym v1 with Z = 0: AutoGPTQ's uint32 wrap damages the word
    # Scales as stored; the kernels and the reference use them as fp16.
    if scale_dtype == "f16":
        scales_t = torch.from_numpy(scales.astype(np.float16))
    elif scale_dtype == "f32":
        scales_t = torch.from_numpy(scales)
    else:
        scales_t = torch.from_numpy(scales).to(torch.bfloat16)
    scales_f16 = scales_t.to(torch.float32).numpy().astype(np.float16)
    # Codes against the scale the file stores (fp16 for the dequantizer).
    q = np.clip(np.round(w / scales_f16.astype(np.float32)[g_idx]) + zeros[g_idx], 0, maxq).astype(
        np.int64)
    qweight = pack_qweight(q.astype(np.uint32), bits)
    stored_zeros = zeros if v2 else zeros - 1
    qzeros = pack_qzeros(stored_zeros, bits)
    expected, q_read = dequant_gptq(qweight, qzeros, scales_f16, g_idx, bits, v2)
    damaged = (not v2) and bool((stored_zeros < 0).any())
    assert (q_read == q).all(), name + ": AutoGPTQ qweight loop and the bitstream rule disagree"
    if not damaged:
        direct = ((q - zeros[g_idx]).astype(np.float32) * scales_f16.astype(np.float32)[g_idx]).astype(
            np.float16)
        assert (direct.view(np.uint16) == expected.view(np.uint16)).all(), name
    if sym:
        words = SYM_WORDS[(bits, "v2" if v2 else "v1")]
        row = qzeros[0]
        for i, word in enumerate(row):
            assert int(word) == words[i % len(words)], (name, i, hex(int(word)))

    tensors = {
        "layer.qweight": torch.from_numpy(qweight.view(np.int32).copy()),
        "layer.qzeros": torch.from_numpy(qzeros.view(np.int32).copy()),
        "layer.scales": scales_t.contiguous(),
        "expected": torch.from_numpy(np.ascontiguousarray(expected.T)),  # [N, K], nn.Linear order
    }
    if write_g_idx:
        tensors["layer.g_idx"] = torch.from_numpy(g_idx.astype(np.int32))
    if label == "auto":
        label = "gptq_v2" if v2 else "gptq"
    config = {"quant_method": "gptq", "bits": bits, "group_size": group_size, "desc_act": desc_act,
              "static_groups": static_groups, "sym": sym}
    if label is not None:
        config["checkpoint_format"] = label
    case = {
        "name": name,
        "format": "gptq",
        "prefix": "layer",
        "in_features": k,
        "out_features": n,
        "bits": bits,
        "groups": groups,
        "zero_format": "v2" if v2 else "v1",
        "symmetric": bool(sym),
        "act_order": bool(desc_act and not static_groups),
        "damaged_v1_zeros": damaged,
        "note": extra_note,
    }
    if config_in == "config":
        case["file"] = name + ".safetensors"
        case["config"] = config
        save_file(tensors, os.path.join(OUT, case["file"]))
    else:  # TheBloke style: no quantization_config, a quantize_config.json beside the weights
        folder = os.path.join(OUT, name)
        os.makedirs(folder, exist_ok=True)
        case["file"] = name + "/model.safetensors"
        case["config"] = None
        save_file(tensors, os.path.join(folder, "model.safetensors"))
        qc = {"bits": bits, "group_size": group_size, "damp_percent": 0.01, "desc_act": desc_act,
              "static_groups": static_groups, "sym": sym, "true_sequential": True,
              "model_name_or_path": None, "model_file_base_name": "model"}
        with open(os.path.join(folder, "quantize_config.json"), "w") as f:
            json.dump(qc, f, indent=2)
    return case


def main():
    os.makedirs(OUT, exist_ok=True)
    rng = np.random.default_rng(20240611)
    cases = [
        make_case(rng, "b4_g32_seq_sym_v1", 4, 256, 64, 32),
        make_case(rng, "b4_g128_act_sym_v1", 4, 512, 32, 128, desc_act=True),
        make_case(rng, "b4_g32_act_asym_v2", 4, 256, 64, 32, desc_act=True, sym=False, v2=True),
        make_case(rng, "b3_g64_act_asym_v2", 3, 256, 32, 64, desc_act=True, sym=False, v2=True),
        make_case(rng, "b3_g32_seq_sym_v1", 3, 192, 64, 32),
        make_case(rng, "b2_g16_seq_sym_v1", 2, 128, 64, 16),
        make_case(rng, "b2_g64_act_asym_v1", 2, 256, 32, 64, desc_act=True, sym=False),
        make_case(rng, "b8_gall_sym_v1", 8, 192, 32, -1),
        make_case(rng, "b8_g32_act_asym_v1", 8, 128, 32, 32, desc_act=True, sym=False),
        make_case(rng, "b4_g100_seq_sym_v1_f32scales", 4, 320, 32, 100, scale_dtype="f32",
                  extra_note="non-power-of-two group size, short last group, fp32 scales"),
        make_case(rng, "b4_g64_static_groups_bf16scales", 4, 256, 32, 64, desc_act=True,
                  static_groups=True, scale_dtype="bf16"),
        make_case(rng, "b4_g32_sym_v2_labelled_gptq", 4, 128, 32, 32, v2=True, label="gptq",
                  extra_note="v2 zeros under a v1 label: the zero words decide"),
        make_case(rng, "b4_g32_sym_v1_no_label", 4, 128, 32, 32, label=None),
        make_case(rng, "b4_g64_no_g_idx", 4, 256, 32, 64, write_g_idx=False,
                  extra_note="old checkpoint without g_idx: group_size from the config"),
        make_case(rng, "b4_g32_asym_v1_zero_wrap", 4, 128, 32, 32, sym=False, force_zero_min=True,
                  extra_note="Z = 0 stored as -1 wraps to 0xFFFFFFFF and damages its word; "
                             "decoded as the reference decoder reads the words"),
        make_case(rng, "b4_g128_thebloke_quantize_config", 4, 256, 32, 128, desc_act=True,
                  config_in="file"),
    ]
    manifest = {
        "generator": "tests/reference/quant_gptq_fixtures.py (numpy, AutoGPTQ packing loops)",
        "expected": "tensor 'expected' F16 [out_features, in_features]",
        "cases": cases,
    }
    with open(os.path.join(OUT, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    total = 0
    for root, _, files in os.walk(OUT):
        total += sum(os.path.getsize(os.path.join(root, x)) for x in files)
    print(f"wrote {len(cases)} GPTQ cases, {total / 1024:.0f} KiB, to {OUT}")


if __name__ == "__main__":
    sys.exit(main())
