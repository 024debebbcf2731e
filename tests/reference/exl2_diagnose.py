#!/usr/bin/env python3
"""Is exllamav2 0.3.2 right in this environment, and does Hearth read its checkpoints right?
(tests/gpu/exl2_reference_job.sh, stages "diagnose" and "dequant"; needs a CUDA GPU.)

  fp16  --hf DIR --out DIR
      The UNQUANTIZED fp16 folder (exl2_smollm2_reference.py gguf-to-hf) in transformers (GPU,
      fp32 and fp16) and in exllamav2 (which loads fp16 safetensors) under each attention path:
        sdpa            exllamav2 as shipped (torch SDPA branch: no flash-attn, no xformers here)
        matmul          config.no_sdpa = True: exllamav2's matmul attention with its own mask
        sdpa_fixed      the SDPA branch given the lower-right causal mask (monkeypatch)
        sdpa_tokenwise  as shipped, but one token per forward through a cache (a single query
                        needs no mask: right even if the multi-token mask is wrong)
      For each: full-vocabulary logits at every position of prompt + transformers' greedy
      continuation against transformers fp32 (mean/max |Δlogit|, KL, same argmax), its own
      16-token greedy continuation, and the relative error of the hidden state entering each
      decoder layer (prompt 0), which locates the first module that goes wrong. Also
      exllamav2's _attn_torch alone on random q/k/v against causal attention. Writes
      <out>/diagnose.json, <out>/attention_mode (the first of sdpa, matmul, sdpa_fixed whose
      logits match transformers, or "none") and <out>/hf_gpu_fp32_folder.json: transformers fp32
      on this folder in the format of tests/fixtures/model/hf_parity.json (HEARTH_HF_GPU_FIXTURE
      of gpu_hf_parity_tests).
  quant --model DIR --hf DIR --attn MODE --out FILE
      An EXL2 checkpoint in exllamav2 (attention MODE) against transformers fp32 on the fp16
      folder it was made from: how far the quantized model is from the original (the same
      statistics as above). A sound 4-bit SmolLM2 stays close (greedy mostly identical at first).
  recon --model DIR --out DIR [--max-layers N]
      exllamav2 loads an EXL2 checkpoint and reconstructs every quantized linear layer with its
      own kernel (ExLlamaV2Linear.get_weight_tensor_dq -> exllamav2_ext.reconstruct). Writes
      <out>/recon.safetensors (one F16 [out_features, in_features] tensor per layer, original
      input order, padding dropped) and <out>/manifest.json, which
      tests/gpu/exl2_checkpoint_dequant_test.cpp (HEARTH_EXL2_RECON=<out>) compares bit for bit
      with Hearth's dequantization of the same checkpoint.

fp16 --transformers-only runs just the transformers part on the CPU (a check of this script on a
machine without a GPU).
"""
import argparse
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exl2_common import ATTENTION_MODES, attention_info, patch_sdpa_mask, prepare_attention  # noqa: E402

GREEDY_OWN = 16
OK_MEAN_KL = 1e-3     # fp16 activations against fp32 give ~2e-5 (transformers fp16, Hearth CUDA)
OK_SAME_TOP = 0.97
FP16_MODES = ("sdpa", "matmul", "sdpa_fixed", "sdpa_tokenwise")


# --- transformers ----------------------------------------------------------------------------

def load_hf(folder, dtype, device):
    from transformers import AutoModelForCausalLM
    try:
        model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype)
    except TypeError:  # transformers < 4.56
        model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=dtype)
    return model.to(device).eval()


def hf_reference(folder, dev):
    """transformers fp32 on the hf_parity prompts: cases (prompt ids, 32 greedy tokens) and the
    full logits of prompt + greedy."""
    import torch
    from transformers import AutoTokenizer
    from hf_parity import PROMPTS
    tok = AutoTokenizer.from_pretrained(folder)
    model = load_hf(folder, torch.float32, dev)
    cases, logits_all = [], []
    with torch.no_grad():
        for text in PROMPTS:
            ids = tok(text, add_special_tokens=False)["input_ids"]
            out = model.generate(torch.tensor([ids], device=dev), max_new_tokens=32, do_sample=False,
                                 eos_token_id=None, pad_token_id=0, min_new_tokens=32)
            greedy = out[0, len(ids):].tolist()
            logits_all.append(model(torch.tensor([ids + greedy], device=dev)).logits[0].float())
            cases.append({"text": text, "prompt_ids": ids, "greedy_ids": greedy})
    return tok, model, cases, logits_all


def hf_layer_inputs(model, ids, dev):
    """transformers' hidden state entering each decoder layer and the final norm, [T, H] fp32."""
    import torch
    states, hooks = [], []

    def grab(_module, args, kwargs):
        x = args[0] if args else kwargs["hidden_states"]
        states.append(x[0].float().clone())

    for layer in model.model.layers:
        hooks.append(layer.register_forward_pre_hook(grab, with_kwargs=True))
    hooks.append(model.model.norm.register_forward_pre_hook(grab, with_kwargs=True))
    try:
        with torch.no_grad():
            model(torch.tensor([ids], device=dev))
    finally:
        for h in hooks:
            h.remove()
    return states


# --- comparisons -----------------------------------------------------------------------------

def compare(ref, got):
    """Full-vocabulary statistics of logits `got` [P, V] against `ref` [P, V] (fp32)."""
    import torch
    d = (got - ref).abs()
    lp_ref = torch.log_softmax(ref.double(), -1)
    lp = torch.log_softmax(got.double(), -1)
    kl = (lp_ref.exp() * (lp_ref - lp)).sum(-1)
    return {"positions": int(ref.shape[0]), "mean_abs": float(d.mean()), "max_abs": float(d.max()),
            "mean_kl": float(kl.mean()), "max_kl": float(kl.max()),
            "same_top": int((ref.argmax(-1) == got.argmax(-1)).sum())}


def merge(stats):
    n = sum(s["positions"] for s in stats)
    return {"positions": n,
            "mean_abs": sum(s["mean_abs"] * s["positions"] for s in stats) / n,
            "max_abs": max(s["max_abs"] for s in stats),
            "mean_kl": sum(s["mean_kl"] * s["positions"] for s in stats) / n,
            "max_kl": max(s["max_kl"] for s in stats),
            "same_top": sum(s["same_top"] for s in stats) / n}


def greedy_agreement(ref_greedy, ref_logits, prompt_len, own):
    """Own greedy tokens against transformers' (whose teacher-forced logits are valid up to the
    first divergence): identical prefix length, and whether our token is in their top 5 there."""
    import torch
    n = 0
    while n < len(own) and n < len(ref_greedy) and own[n] == ref_greedy[n]:
        n += 1
    if n == len(own):
        return {"identical": True, "prefix": n, "own": own}
    top5 = torch.topk(ref_logits[prompt_len - 1 + n], 5).indices.tolist()
    return {"identical": False, "prefix": n, "ours_in_ref_top5": own[n] in top5, "own": own}


# --- exllamav2 -------------------------------------------------------------------------------

def load_exl2(folder):
    from exllamav2 import ExLlamaV2, ExLlamaV2Cache, ExLlamaV2Config
    config = ExLlamaV2Config(folder)
    config.max_seq_len = 512
    config.max_input_len = 512
    config.max_attention_size = 512 * 512
    model = ExLlamaV2(config)
    model.load()
    cache = ExLlamaV2Cache(model, max_seq_len=512)
    return config, model, cache


def set_mode(config, mode):
    config.no_sdpa = mode == "matmul"
    patch_sdpa_mask(mode == "sdpa_fixed")


def exl2_evaluate(config, model, cache, mode, cases, ref_logits, hf32, dev):
    """exllamav2 under `mode` against transformers fp32: logits, own greedy, layer inputs."""
    import torch
    from exllamav2.attn import ExLlamaV2Attention
    from exllamav2.rmsnorm import ExLlamaV2RMSNorm
    vocab = config.vocab_size
    set_mode(config, "sdpa" if mode == "sdpa_tokenwise" else mode)

    def full(ids):
        with torch.inference_mode():
            return model.forward(torch.tensor([ids], dtype=torch.long))[0, :, :vocab].float().to(dev)

    def tokenwise(ids):
        cache.current_seq_len = 0
        rows = []
        with torch.inference_mode():
            for t in ids:
                rows.append(model.forward(torch.tensor([[t]], dtype=torch.long), cache)[0, -1, :vocab])
        return torch.stack(rows).float().to(dev)

    stats, greedy = [], []
    for i, c in enumerate(cases):
        seq = c["prompt_ids"] + c["greedy_ids"]
        stats.append(compare(ref_logits[i], (tokenwise if mode == "sdpa_tokenwise" else full)(seq)))
        own, cur = [], list(c["prompt_ids"])
        if mode != "sdpa_tokenwise":  # full recompute per token, no cache
            for _ in range(GREEDY_OWN):
                own.append(int(full(cur)[-1].argmax()))
                cur.append(own[-1])
        else:  # the prompt one token per forward too, then decode through the cache
            row = tokenwise(cur)[-1]
            with torch.inference_mode():
                for _ in range(GREEDY_OWN):
                    own.append(int(row.argmax()))
                    row = model.forward(torch.tensor([[own[-1]]], dtype=torch.long), cache)[0, -1, :vocab].float()
        greedy.append(greedy_agreement(c["greedy_ids"], ref_logits[i], len(c["prompt_ids"]), own))
    m = merge(stats)
    m["greedy_identical"] = sum(g["identical"] for g in greedy)
    m["greedy_first_token_same"] = sum(g["prefix"] > 0 for g in greedy)
    m["greedy"] = greedy
    m["ok"] = m["mean_kl"] <= OK_MEAN_KL and m["same_top"] >= OK_SAME_TOP

    # Hidden state entering each decoder layer and the final norm, prompt 0 + its greedy tokens.
    if mode != "sdpa_tokenwise":
        seq = cases[0]["prompt_ids"] + cases[0]["greedy_ids"]
        idx = [i for i, mod in enumerate(model.modules) if isinstance(mod, ExLlamaV2Attention)]
        idx += [i for i, mod in enumerate(model.modules) if isinstance(mod, ExLlamaV2RMSNorm)]
        with torch.inference_mode():
            r = model.forward_chunk(input_ids=torch.tensor([seq], dtype=torch.long),
                                    extract_state_indices=idx)
        ref_states = hf_layer_inputs(hf32, seq, dev)
        rel = []
        for j, ref in zip(idx, ref_states):
            x = r["states"][j][0].float().to(dev)
            rel.append(float((x - ref).norm() / ref.norm().clamp_min(1e-30)))
        m["layer_input_rel_err"] = rel  # [layer 0 input (embedding), ..., final norm input]
        first = next((k for k, e in enumerate(rel) if e > 0.02), None)
        m["first_layer_input_off"] = first
    set_mode(config, "sdpa")
    return m


def describe(label, m, n):
    line = ("%-30s mean |Δ| %.4f, max %.3f, mean KL %.2e, same top %.1f%%, own greedy identical "
            "(16) %d/%d, first token %d/%d" % (label, m["mean_abs"], m["max_abs"], m["mean_kl"],
                                                100 * m["same_top"], m["greedy_identical"], n,
                                                m["greedy_first_token_same"], n))
    if "layer_input_rel_err" in m:
        rel = m["layer_input_rel_err"]
        first = m["first_layer_input_off"]
        line += ("; layer-input rel err: layer 1 %.1e, last %.1e, final %.1e, first > 2%%: %s"
                 % (rel[1] if len(rel) > 1 else float("nan"), rel[-2], rel[-1],
                    "none" if first is None else ("final norm" if first == len(rel) - 1 else
                                                  "input of layer %d" % first)))
    return line


# --- subcommands -----------------------------------------------------------------------------

def cmd_fp16(args):
    prepare_attention("sdpa")  # as shipped; the modes are switched per call below
    import torch
    import transformers
    only_transformers = args.transformers_only
    if not torch.cuda.is_available() and not only_transformers:
        sys.exit("exl2_diagnose.py needs a CUDA GPU")
    os.makedirs(args.out, exist_ok=True)
    dev = torch.device("cpu" if only_transformers else "cuda:0")
    t0 = time.time()
    report = {"torch": torch.__version__, "transformers": transformers.__version__,
              "folder": os.path.abspath(args.hf),
              "gpu": "none (cpu)" if only_transformers else torch.cuda.get_device_name(0)}

    tok, hf32, cases, ref_logits = hf_reference(args.hf, dev)
    committed = json.load(open(os.path.join(HERE, "..", "fixtures", "model", "hf_parity.json")))
    worst = 0.0
    fixture_cases = []
    for i, (c, cc) in enumerate(zip(cases, committed["cases"])):
        lg = ref_logits[i]
        lse = torch.logsumexp(lg, -1)
        top = torch.topk(lg, 40, -1)
        positions = [{"lse": round(float(lse[p]), 6), "top_ids": top.indices[p].tolist(),
                      "top_logits": [round(float(v), 5) for v in top.values[p]]}
                     for p in range(lg.shape[0])]
        fixture_cases.append(dict(c, positions=positions))
        c["same_prompt_ids_as_committed"] = c["prompt_ids"] == cc["prompt_ids"]
        c["same_greedy_as_committed_cpu"] = c["greedy_ids"] == cc["greedy_ids"]
        if c["same_prompt_ids_as_committed"]:
            for p in range(len(c["prompt_ids"])):
                ids_ = cc["positions"][p]["top_ids"]
                vals = torch.tensor(cc["positions"][p]["top_logits"], device=dev)
                worst = max(worst, float((lg[p][ids_] - vals).abs().max()))
    fixture = {"model": "fp16 folder made from the GGUF (exl2_smollm2_reference.py gguf-to-hf)",
               "reference": "transformers %s, torch %s, %s float32" % (transformers.__version__,
                                                                      torch.__version__, dev.type),
               "new_tokens": 32, "top_k": 40, "cases": fixture_cases}
    with open(os.path.join(args.out, "hf_gpu_fp32_folder.json"), "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
    report["transformers_fp32"] = {
        "cases": len(cases),
        "prompt_ids_as_committed": sum(c["same_prompt_ids_as_committed"] for c in cases),
        "greedy_as_committed_cpu_gguf": sum(c["same_greedy_as_committed_cpu"] for c in cases),
        "max_abs_vs_committed_cpu_top40_prompt_positions": worst,
        "first_greedy": tok.decode(cases[0]["greedy_ids"][:8]),
    }
    hf16 = load_hf(args.hf, torch.float16, dev)
    with torch.no_grad():
        st = [compare(ref_logits[i], hf16(torch.tensor([c["prompt_ids"] + c["greedy_ids"]],
                                                        device=dev)).logits[0].float())
              for i, c in enumerate(cases)]
    report["transformers_fp16_vs_fp32"] = merge(st)
    del hf16
    if only_transformers:
        print(json.dumps(report, indent=1))
        return
    torch.cuda.empty_cache()

    # exllamav2 on the same fp16 folder.
    from exllamav2.attn import ExLlamaV2Attention
    from exllamav2.version import __version__ as exl2_version
    report["exllamav2"] = exl2_version
    config, model, cache = load_exl2(args.hf)
    report["exllamav2_attention_available"] = attention_info(config)

    # _attn_torch alone: random q/k/v, 37 positions, against causal attention in fp32.
    attn = next(m for m in model.modules if isinstance(m, ExLlamaV2Attention))
    T, H, KH, D = 37, attn.num_attention_heads, attn.num_key_value_heads, attn.head_dim
    g = torch.Generator(device=dev).manual_seed(3)
    q = torch.randn(1, T, H, D, device=dev, generator=g).half()
    k = torch.randn(1, T, KH, D, device=dev, generator=g).half()
    v = torch.randn(1, T, KH, D, device=dev, generator=g).half()
    qf = q.float().transpose(1, 2)
    kf = k.float().transpose(1, 2).repeat_interleave(H // KH, 1)
    vf = v.float().transpose(1, 2).repeat_interleave(H // KH, 1)
    s = qf @ kf.transpose(-1, -2) * attn.scaling
    causal = s.masked_fill(torch.ones(T, T, dtype=torch.bool, device=dev).triu(1), float("-inf"))
    causal = (causal.softmax(-1) @ vf).transpose(1, 2).reshape(1, T, H * D)
    bidirectional = (s.softmax(-1) @ vf).transpose(1, 2).reshape(1, T, H * D)
    report["attn_torch_unit"] = {}
    for mode in ("sdpa", "matmul", "sdpa_fixed"):
        set_mode(config, mode)
        params = ExLlamaV2Attention.Params(1, T, 0, None, None)
        with torch.inference_mode():
            o = attn._attn_torch(1, T, q.clone(), k.clone(), v.clone(), params, config).float()
        report["attn_torch_unit"][mode] = {
            "max_abs_vs_causal": float((o - causal).abs().max()),
            "max_abs_vs_bidirectional": float((o - bidirectional).abs().max()),
        }
    set_mode(config, "sdpa")

    report["exllamav2_fp16"] = {}
    for mode in FP16_MODES:
        report["exllamav2_fp16"][mode] = exl2_evaluate(config, model, cache, mode, cases, ref_logits,
                                                       hf32, dev)
    ok = [m for m in ("sdpa", "matmul", "sdpa_fixed") if report["exllamav2_fp16"][m]["ok"]]
    report["attention_mode"] = ok[0] if ok else "none"
    report["seconds"] = round(time.time() - t0, 1)
    with open(os.path.join(args.out, "diagnose.json"), "w") as f:
        json.dump(report, f, indent=1)
    with open(os.path.join(args.out, "attention_mode"), "w") as f:
        f.write(report["attention_mode"] + "\n")

    # The summary (the job script copies everything from its first line into summary.txt).
    tf = report["transformers_fp32"]
    n = len(cases)
    print("transformers fp32 (GPU) on the fp16 folder: prompt ids as committed %d/%d, greedy as the "
          "committed CPU/GGUF fixture %d/%d, max |Δlogit| vs its top-40 on prompt positions %.4f; "
          "prompt 0 -> %r" % (tf["prompt_ids_as_committed"], n, tf["greedy_as_committed_cpu_gguf"], n,
                              tf["max_abs_vs_committed_cpu_top40_prompt_positions"], tf["first_greedy"]))
    h = report["transformers_fp16_vs_fp32"]
    print("transformers fp16 vs fp32: mean |Δ| %.4f, max %.3f, mean KL %.2e, same top %.1f%%"
          % (h["mean_abs"], h["max_abs"], h["mean_kl"], 100 * h["same_top"]))
    print("exllamav2 %s attention available: %s" % (exl2_version, report["exllamav2_attention_available"]))
    for mode, u in report["attn_torch_unit"].items():
        print("exllamav2 _attn_torch alone, %-10s max |Δ| vs causal %.2e, vs bidirectional %.2e"
              % (mode, u["max_abs_vs_causal"], u["max_abs_vs_bidirectional"]))
    for mode, m in report["exllamav2_fp16"].items():
        print(describe("exllamav2 fp16 %s:" % mode, m, n) + (" -> OK" if m["ok"] else " -> WRONG"))
    print("  sdpa's greedy for prompt 0: %r"
          % tok.decode(report["exllamav2_fp16"]["sdpa"]["greedy"][0]["own"][:8]))
    print("attention mode for quantize/reference: %s" % report["attention_mode"])


def cmd_quant(args):
    prepare_attention(args.attn)
    import torch
    if not torch.cuda.is_available():
        sys.exit("exl2_diagnose.py needs a CUDA GPU")
    dev = torch.device("cuda:0")
    tok, hf32, cases, ref_logits = hf_reference(args.hf, dev)
    config, model, cache = load_exl2(args.model)
    m = exl2_evaluate(config, model, cache, args.attn, cases, ref_logits, hf32, dev)
    m["model"] = os.path.abspath(args.model)
    m["attention"] = attention_info(config)
    m["own_greedy_prompt0"] = tok.decode(m["greedy"][0]["own"][:8])
    with open(args.out, "w") as f:
        json.dump(m, f, indent=1)
    print(describe("exllamav2 %s (%s) vs transformers fp32 on the fp16 folder:"
                   % (os.path.basename(os.path.normpath(args.model)), args.attn), m, len(cases)))
    print("  its greedy for prompt 0: %r" % m["own_greedy_prompt0"])


def cmd_recon(args):
    prepare_attention("matmul")  # attention plays no part here
    import torch
    from safetensors.torch import save_file
    if not torch.cuda.is_available():
        sys.exit("exl2_diagnose.py needs a CUDA GPU")
    from exllamav2.linear import ExLlamaV2Linear
    from exllamav2.version import __version__ as exl2_version
    config, model, _ = load_exl2(args.model)
    tensors, layers = {}, []
    for key, m in model.modules_dict.items():
        if not isinstance(m, ExLlamaV2Linear) or m.q_handle is None:
            continue
        with torch.inference_mode():
            if ".mlp." in key:
                # ExLlamaV2MLP.load() reorders gate/up outputs by down_proj's act-order permutation
                # and drops that permutation from down_proj (so the intermediate needs no gather):
                # the matrices in memory are not the file's. Reload each alone, as stored.
                m.unload()
                m.load()
            w = m.get_weight_tensor_dq()  # [in, out + padding]: exllamav2_ext.reconstruct
        n = m.out_features - m.padding
        tensors[key] = w[:, :n].t().contiguous().cpu()
        layers.append({"key": key, "in_features": m.in_features, "out_features": n,
                       "padded_out_features": m.out_features})
        if args.max_layers and len(layers) >= args.max_layers:
            break
    os.makedirs(args.out, exist_ok=True)
    save_file(tensors, os.path.join(args.out, "recon.safetensors"))
    manifest = {"generator": "tests/reference/exl2_diagnose.py recon (exllamav2 %s, %s)"
                             % (exl2_version, torch.cuda.get_device_name(0)),
                "model_dir": os.path.abspath(args.model), "file": "recon.safetensors",
                "layers": layers}
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("reconstructed %d quantized layers of %s (%d weights)"
          % (len(layers), args.model, sum(x["in_features"] * x["out_features"] for x in layers)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("fp16")
    a.add_argument("--hf", required=True)
    a.add_argument("--out", required=True)
    a.add_argument("--transformers-only", action="store_true",
                   help="only the transformers part, on the CPU: a check of this script")
    q = sub.add_parser("quant")
    q.add_argument("--model", required=True)
    q.add_argument("--hf", required=True)
    q.add_argument("--attn", choices=ATTENTION_MODES, default="matmul")
    q.add_argument("--out", required=True)
    r = sub.add_parser("recon")
    r.add_argument("--model", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--max-layers", type=int, default=0)
    args = ap.parse_args()
    {"fp16": cmd_fp16, "quant": cmd_quant, "recon": cmd_recon}[args.cmd](args)


if __name__ == "__main__":
    main()
