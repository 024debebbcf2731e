#!/usr/bin/env python3
"""EXL2 layer fixtures made by exllamav2 0.3.2 itself (needs a CUDA GPU), for tests/unit/quant.

For each case a random fp16 nn.Linear is quantized by exllamav2's own quantizer
(conversion/adaptivegptq.py: AdaptiveGPTQ.add_batch / prepare / configure / quantize) and packed
by its own packer (AdaptiveGPTQ.pack). The expected matrix is what exllamav2's runtime decodes
from those tensors: ext.make_q_matrix + exllamav2_ext.reconstruct (W[K, N], original row order),
checked here against the quantizer's own simulated weights. Each case also records
exllamav2's fused GEMM (gemm_half_q_half, force_cuda) on a random x, so the C++ test can hold
Hearth's product against exllamav2's kernel too.

The output uses the manifest format of tests/fixtures/quant/exl2_numpy (same C++ test):
  <out>/manifest.json, <out>/<case>.safetensors with layer.q_weight, layer.q_scale,
  layer.q_scale_max, layer.q_groups, layer.q_invperm (layer.bias), expected F16 [N, K],
  x F16 [R, K], y_exllamav2 F16 [R, N].

A second part cross-checks the committed GPTQ fixtures (4-bit, power-of-two groups: the cases
exllamav2 can load) against exllamav2's GPTQ reconstruct, into <out>/gptq_crosscheck.json.

Run on the GPU machine (tests/gpu/exl2_reference_job.sh does):
  PYTHONPATH=<exllamav2 dir> python3 tests/reference/exl2_make_fixtures.py --out DIR
"""
import argparse
import json
import os
import sys
import types

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exl2_common import stub_missing  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True, help="output folder (created)")
    ap.add_argument("--gptq-fixtures", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                            "..", "fixtures", "quant", "gptq"))
    ap.add_argument("--seed", type=int, default=1234)
    args = ap.parse_args()

    stub_missing(["fastparquet", "pandas"])
    import torch
    if not torch.cuda.is_available():
        sys.exit("exl2_make_fixtures.py needs a CUDA GPU (exllamav2's quantizer and kernels)")
    # AdaptiveGPTQ makes its tensors (qgroups, qscale, ...) inside torch.inference_mode() and
    # pack() then writes into them, which torch refuses outside inference mode (exllamav2's own
    # converter runs under @torch.inference_mode()): so does everything here.
    with torch.inference_mode():
        make_fixtures(args)


def make_fixtures(args):
    import numpy as np
    import torch
    from safetensors.torch import save_file, load_file
    from exllamav2.ext import exllamav2_ext as ext_c, none_tensor, make_q_matrix
    from exllamav2.conversion.adaptivegptq import AdaptiveGPTQ
    from exllamav2.version import __version__ as exl2_version

    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(args.seed)
    dev = torch.device("cuda:0")

    def reconstruct(tensors, k, n_pad, x):
        w = {}
        for key, value in tensors.items():
            w[key.split(".")[-1]] = value.clone().to(dev)
        w["q_perm"] = torch.argsort(w["q_invperm"]).to(torch.int)
        handle = make_q_matrix(w, none_tensor)
        k_eff = w["q_group_map"].shape[0] // 2
        out = torch.empty((k_eff, n_pad), dtype=torch.half, device=dev)
        ext_c.reconstruct(handle, out)
        y = torch.empty((x.shape[0], n_pad), dtype=torch.half, device=dev)
        ext_c.gemm_half_q_half(x, handle, y, True)
        ext_c.free_q_matrix(handle)
        return out[:k], y

    cases = []
    specs = [
        # name, K, N, bits, proportions, group sizes, bias
        ("b2_g32", 512, 64, [2], [1.0], {2: 32}, False),
        ("b3_g64", 512, 64, [3], [1.0], {3: 64}, False),
        ("b4_g128", 512, 64, [4], [1.0], {4: 128}, False),
        ("b5_g32", 512, 64, [5], [1.0], {5: 32}, False),
        ("b6_g128", 512, 64, [6], [1.0], {6: 128}, False),
        ("b8_g32", 512, 64, [8], [1.0], {8: 32}, False),
        ("mixed_8_6_5_4_3_2_bias", 1024, 64, [8, 6, 5, 4, 3, 2], [0.05, 0.1, 0.15, 0.2, 0.25, 0.25],
         {8: 32, 6: 64, 5: 32, 4: 128, 3: 64, 2: 64}, True),
        ("down_proj_6_3_2", 1024, 64, [6, 3, 2], [0.05, 0.2, 0.75], {6: 32, 3: 64, 2: 64}, False),
        ("head_n200_padded", 256, 200, [8, 6], [0.15, 0.85], {8: 128, 6: 128}, True),
        ("k1056_short_last_group", 1056, 32, [4], [1.0], {4: 128}, False),
        ("spec_worked_example_mixed", 2048, 32, [8, 6, 5, 4, 3, 2], [0.05, 0.1, 0.15, 0.2, 0.25, 0.25],
         {8: 32, 6: 64, 5: 32, 4: 128, 3: 64, 2: 64}, False),
    ]
    for name, k, n, bits, props, gsz, bias in specs:
        # As ExLlamaV2Linear.load does before the converter quantizes a layer: output features
        # padded to a multiple of 32 with zero rows (and zero bias), so q_weight, q_scale and the
        # bias all have the padded width (make_q_matrix insists on bias width = q_weight width).
        n_pad = -(-n // 32) * 32
        layer = torch.nn.Linear(k, n_pad, bias=bias, dtype=torch.half, device=dev)
        layer.weight.zero_()
        layer.weight[:n].normal_(0, 0.02)
        if bias:
            layer.bias.zero_()
            layer.bias[:n].uniform_(-0.1, 0.1)
        # Calibration inputs with uneven channel scales, so act-order permutes for real.
        cal = torch.randn(1024, k, device=dev) * torch.rand(1, k, device=dev).pow(2).mul(4).add(0.1)
        lq = AdaptiveGPTQ(layer)
        lq.add_batch(cal.half())
        lq.prepare()
        lq.configure(gsz, bits, props, 4)
        lq.quantize(keep_qweight=True, apply=True)
        simulated = lq.quant[lq.invperm, :].half()  # the quantizer's own weights, [K, N]
        packed = lq.pack("layer", types.SimpleNamespace(scale_bits=4))
        packed = {key: value.contiguous().cpu() for key, value in packed.items()}
        assert packed["layer.q_weight"].shape[1] == n_pad
        x = (torch.randn(5, k, device=dev) * 0.5).half()
        w, y = reconstruct(packed, k, n_pad, x)
        same = bool(torch.equal(w[:, :n].view(torch.int16), simulated[:, :n].view(torch.int16)))
        tensors = dict(packed)
        tensors["expected"] = w[:, :n].t().contiguous().cpu()
        tensors["x"] = x.cpu()
        tensors["y_exllamav2"] = y[:, :n].contiguous().cpu()
        save_file(tensors, os.path.join(args.out, name + ".safetensors"))
        qg = packed["layer.q_groups"].to(torch.int32).numpy().astype(np.uint16).tolist()
        cases.append({
            "name": name, "format": "exl2", "file": name + ".safetensors", "prefix": "layer",
            "config": None, "in_features": k, "out_features": n, "padded_out_features": n_pad,
            "bits": sorted(set(bits), reverse=True), "groups": len(qg) // 2,
            "packed_rows": int(packed["layer.q_weight"].shape[0]), "q_groups": qg,
            "has_bias": bias, "reconstruct_equals_quantizer": same,
            "note": "exllamav2 %s AdaptiveGPTQ + pack; expected = reconstruct" % exl2_version,
        })
        print(f"{name}: {len(qg) // 2} groups, Q = {packed['layer.q_weight'].shape[0]}, "
              f"reconstruct == quantizer: {same}")
    manifest = {
        "generator": "tests/reference/exl2_make_fixtures.py (exllamav2 %s on %s)"
                     % (exl2_version, torch.cuda.get_device_name(0)),
        "expected": "tensor 'expected' F16 [out_features, in_features] (exllamav2 reconstruct)",
        "cases": cases,
    }
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)

    # GPTQ: the committed numpy fixtures against exllamav2's own GPTQ path (4-bit only there).
    report = {"exllamav2": exl2_version, "cases": []}
    gdir = os.path.abspath(args.gptq_fixtures)
    gman = json.load(open(os.path.join(gdir, "manifest.json")))
    for c in gman["cases"]:
        entry = {"name": c["name"]}
        gs = None if c["config"] is None else c["config"].get("group_size")
        if c["bits"] != 4 or (gs not in (-1, None) and gs & (gs - 1)):
            entry["skipped"] = "exllamav2 reads 4-bit GPTQ with power-of-two groups only"
            report["cases"].append(entry)
            continue
        t = load_file(os.path.join(gdir, c["file"]))
        w = {"qweight": t["layer.qweight"].to(dev), "qzeros": t["layer.qzeros"].to(dev).clone(),
             "scales": t["layer.scales"].to(dev).to(torch.half)}
        if "layer.g_idx" in t:
            w["g_idx"] = t["layer.g_idx"].to(dev)
        try:
            handle = make_q_matrix(w, none_tensor, offset_qzeros=c["zero_format"] == "v2")
            k, n = c["in_features"], c["out_features"]
            out = torch.empty((k, n), dtype=torch.half, device=dev)
            ext_c.reconstruct(handle, out)
            ext_c.free_q_matrix(handle)
            ref = t["expected"].t().contiguous()
            diff = (out.cpu().view(torch.int16) != ref.view(torch.int16)).sum().item()
            entry["mismatching_fp16_elements"] = int(diff)
            entry["elements"] = k * n
        except Exception as e:  # report, do not stop the fixture run
            entry["error"] = repr(e)
        report["cases"].append(entry)
        print("gptq", entry)
    with open(os.path.join(args.out, "gptq_crosscheck.json"), "w") as f:
        json.dump(report, f, indent=1)


if __name__ == "__main__":
    main()
