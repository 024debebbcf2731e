#!/usr/bin/env python3
"""A third reference for an EXL2 checkpoint: transformers' LlamaForCausalLM in fp32 (eager
attention, no TF32) on exactly the checkpoint's dequantized weights.

Hearth and exllamav2 read every quantized layer of exllamav2's checkpoints bit for bit alike
(exl2_checkpoint_tests), yet at 2.5 bpw their logits differ a lot. This script computes what the
checkpoint's weights give in fp32 arithmetic, in the JSON format of exllamav2's logits
(exl2_smollm2_reference.py reference: exl2_smollm2_<bpw>.json), so that both engines can be
measured against it: exllamav2 here (one summary line), Hearth by quant_exl2_smollm2_tests fed
this JSON under exllamav2's file name (tests/gpu/exl2_reference_job.sh, stage "truth").

  truth --hf DIR --recon DIR --reference FILE --out FILE [--model DIR] [--name NAME]
        [--device auto|cpu|cuda] [--dtype float32|float16|bfloat16] [--label LABEL]
      DIR (--hf): the fp16 safetensors folder the checkpoint was made from (config, tokenizer,
      unquantized weights). --recon: the folder `exl2_diagnose.py recon` wrote for the
      checkpoint: manifest.json (model_dir; per layer key, in_features, out_features) and
      recon.safetensors (per key one F16 [out_features, in_features] tensor, exllamav2's own
      reconstruction, original input order, padding dropped). Each listed layer's weight is
      replaced by it in fp32 (lm_head too: a tied head is untied, the embedding stays). The
      checkpoint's unquantized tensors (embedding, norms; --model, default the manifest's
      model_dir when it exists) replace the folder's where names and shapes match.
      --reference: exllamav2's JSON for the checkpoint; its prompt ids and probe ids are used
      (so all three references see the same tokens) and it is compared with the result: one line
        truth <name>: <label> vs fp32 truth mean|Δ| ..., max ..., max |Δlse| ..., mean KL ...,
        argmax a/b, top-1 c/d, greedy exact e, within top-5 f, beyond g
      computed as quant_exl2_smollm2_test.cpp computes Hearth against exllamav2 (values on the
      reference's top-20 and probe ids, KL(reference ‖ truth) over its top 20 + the rest, argmax
      where the reference's top-2 margin exceeds 0.3, greedy continuations identical or diverging
      within each other's top 5). --out: the truth JSON (cases with per-position top-20, lse,
      probe logits; 32 greedy tokens by full recompute with the top 5 of every step) plus
      "vs_reference" (those statistics) and "weights" (what was replaced).
  selftest [--keep DIR]
      CPU only: a tiny synthetic Llama (tied embeddings) saved as an fp16 folder, a fake recon
      dump in recon's format and a fake checkpoint with a different embedding; checks that the
      loaded model holds exactly the intended weights (head untied, embedding kept), that its
      logits equal those of an independently built model, the JSON's format, and that the
      comparison reads ~0 against that model's own JSON and > 0 against a perturbed one.

Needs torch, transformers and safetensors; not exllamav2.
"""
import argparse
import glob
import json
import math
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from exl2_smollm2_reference import GREEDY_TOKENS, PROMPTS, TOP, reference_case  # noqa: E402

ARGMAX_MARGIN = 0.3  # as quant_exl2_smollm2_test.cpp


# --- the model ---------------------------------------------------------------------------------

def strict_fp32():
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")


def load_hf_eager(folder, dtype, device):
    from transformers import LlamaForCausalLM
    try:
        model = LlamaForCausalLM.from_pretrained(folder, dtype=dtype, attn_implementation="eager")
    except TypeError:  # transformers < 4.56
        model = LlamaForCausalLM.from_pretrained(folder, torch_dtype=dtype,
                                                 attn_implementation="eager")
    return model.to(device).eval()


def checkpoint_tensors(folder):
    """The checkpoint's tensors by name (all *.safetensors of the folder), on the CPU."""
    from safetensors.torch import load_file
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        out.update(load_file(f))
    return out


def apply_weights(model, recon_dir, checkpoint_dir=None):
    """Puts the checkpoint's weights into `model`: every layer of the recon dump (exllamav2's
    reconstruction, [out, in] F16) and the checkpoint's unquantized tensors. Returns a summary."""
    import torch
    from safetensors.torch import load_file
    with open(os.path.join(recon_dir, "manifest.json")) as f:
        manifest = json.load(f)
    recon = load_file(os.path.join(recon_dir, manifest.get("file", "recon.safetensors")))
    dtype = next(model.parameters()).dtype
    embed = model.get_input_embeddings().weight
    info = {"recon": os.path.abspath(recon_dir), "recon_generator": manifest.get("generator"),
            "quantized_layers": 0, "quantized_weights": 0, "untied_head": False,
            "unquantized_from_checkpoint": [], "unquantized_differing_from_folder": []}
    quantized = set()
    for layer in manifest["layers"]:
        key = layer["key"]
        w = recon[key]
        assert w.dtype == torch.float16, (key, w.dtype)
        assert list(w.shape) == [layer["out_features"], layer["in_features"]], (key, w.shape)
        mod = model.get_submodule(key)
        assert tuple(mod.weight.shape) == tuple(w.shape), (key, mod.weight.shape, w.shape)
        if mod.weight is embed or mod.weight.data_ptr() == embed.data_ptr():
            info["untied_head"] = True
            model.config.tie_word_embeddings = False
            if hasattr(model.config, "get_text_config"):
                model.config.get_text_config().tie_word_embeddings = False
        # A fresh parameter: never writes through a tie into the embedding.
        mod.weight = torch.nn.Parameter(w.to(device=mod.weight.device, dtype=dtype),
                                        requires_grad=False)
        quantized.add(key)
        info["quantized_layers"] += 1
        info["quantized_weights"] += w.numel()
    info["lm_head_quantized"] = "lm_head" in quantized

    if checkpoint_dir is None:
        md = manifest.get("model_dir")
        checkpoint_dir = md if md and os.path.isdir(md) else None
    info["checkpoint"] = os.path.abspath(checkpoint_dir) if checkpoint_dir else None
    if checkpoint_dir:
        params = dict(model.named_parameters(remove_duplicate=False))
        for name, t in checkpoint_tensors(checkpoint_dir).items():
            if not name.endswith(".weight") or name[:-len(".weight")] in quantized:
                continue
            p = params.get(name)
            if p is None or tuple(p.shape) != tuple(t.shape):
                continue
            new = t.to(device=p.device, dtype=dtype)
            if not torch.equal(p.data, new):
                info["unquantized_differing_from_folder"].append(name)
            with torch.no_grad():
                p.data.copy_(new)
            info["unquantized_from_checkpoint"].append(name)

    # Check: every layer holds exactly its reconstruction, the head is not the embedding.
    for layer in manifest["layers"]:
        key = layer["key"]
        got = model.get_submodule(key).weight.detach()
        assert torch.equal(got.cpu(), recon[key].to(dtype)), key
    if "lm_head" in quantized:
        assert model.get_output_embeddings().weight.data_ptr() != \
            model.get_input_embeddings().weight.data_ptr()
    return info


# --- the reference JSON ------------------------------------------------------------------------

def probe_ids_for(vocab):
    """exl2_smollm2_reference.py's probe ids (when no reference JSON gives them)."""
    import torch
    gen = torch.Generator().manual_seed(7)
    return sorted(set(torch.randint(0, vocab, (64,), generator=gen).tolist()))[:32]


def run_cases(model, prompts, probe, device, greedy_tokens=GREEDY_TOKENS):
    """Per prompt: the JSON case (exl2_smollm2_reference.py's format) and the full fp32 logits of
    the prompt positions, greedy top-5 lists."""
    import torch
    vocab = model.config.vocab_size

    def logits_of(ids):
        with torch.inference_mode():
            out = model(torch.tensor([ids], dtype=torch.long, device=device)).logits
        return out[0, :, :vocab].float().cpu()

    cases, full = [], []
    for text, ids in prompts:
        case, logits = reference_case(text, ids, logits_of, probe, greedy_tokens)
        cases.append(case)
        full.append(logits)
    return cases, full


def compare_reference(ref, cases, full):
    """The reference JSON `ref` (exllamav2's) against the truth (full logits per case), as
    quant_exl2_smollm2_test.cpp compares Hearth with exllamav2: KL(reference ‖ truth)."""
    import torch
    probe = ref["probe_ids"]
    sum_abs = max_abs = max_lse = kl_sum = 0.0
    values = positions = argmax_checked = argmax_same = top1_same = 0
    exact = div_ok = div_bad = 0
    first_divergence = []
    for rc, tc, logits in zip(ref["cases"], cases, full):
        assert rc["prompt_ids"] == tc["prompt_ids"], "prompt ids differ"
        for p, r in enumerate(rc["positions"]):
            row = logits[p].double()
            lse = torch.logsumexp(row, 0).item()
            ref_lse = r["lse"]
            max_lse = max(max_lse, abs(lse - ref_lse))
            ids, vals = r["top_ids"], r["top_logits"]
            got = row[ids].tolist()
            p_top = q_top = kl = 0.0
            for v, g in zip(vals, got):
                d = abs(g - v)
                sum_abs += d
                max_abs = max(max_abs, d)
                values += 1
                lp, lq = v - ref_lse, g - lse
                kl += math.exp(lp) * (lp - lq)
                p_top += math.exp(lp)
                q_top += math.exp(lq)
            p_tail, q_tail = max(1e-12, 1 - p_top), max(1e-12, 1 - q_top)
            kl_sum += kl + p_tail * math.log(p_tail / q_tail)
            for v, g in zip(r["probe_logits"], row[probe].tolist()):
                d = abs(g - v)
                sum_abs += d
                max_abs = max(max_abs, d)
                values += 1
            same = int(torch.argmax(row)) == ids[0]
            top1_same += same
            if vals[0] - vals[1] > ARGMAX_MARGIN:
                argmax_checked += 1
                argmax_same += same
            positions += 1
        rg, tg = rc["greedy_ids"], tc["greedy_ids"]
        i = 0
        while i < len(tg) and i < len(rg) and tg[i] == rg[i]:
            i += 1
        first_divergence.append(None if i == len(tg) else i)
        if i == len(tg):
            exact += 1
        else:
            ok = tg[i] in rc["greedy_top5"][i] and rg[i] in tc["greedy_top5"][i]
            div_ok += ok
            div_bad += not ok
    return {"positions": positions, "values": values, "mean_abs_dlogit": sum_abs / values,
            "max_abs_dlogit": max_abs, "max_abs_dlse": max_lse, "mean_kl": kl_sum / positions,
            "kl_direction": "KL(reference || truth), reference top-20 + the rest",
            "argmax_checked": argmax_checked, "argmax_same": argmax_same,
            "top1_same": top1_same, "greedy_exact": exact, "greedy_diverged_within_top5": div_ok,
            "greedy_diverged_beyond_top5": div_bad, "greedy_first_divergence": first_divergence}


def summary_line(name, label, s):
    return ("truth %s: %s vs fp32 truth mean|Δ| %.4f, max %.3f, max |Δlse| %.3f, mean KL %.2e, "
            "argmax %d/%d, top-1 %d/%d, greedy exact %d, within top-5 %d, beyond %d"
            % (name, label, s["mean_abs_dlogit"], s["max_abs_dlogit"], s["max_abs_dlse"],
               s["mean_kl"], s["argmax_same"], s["argmax_checked"], s["top1_same"],
               s["positions"], s["greedy_exact"], s["greedy_diverged_within_top5"],
               s["greedy_diverged_beyond_top5"]))


def prompts_for(args, ref):
    """(text, ids) per prompt: the reference's ids when given, else the folder's tokenizer."""
    if ref is not None:
        return [(c["text"], c["prompt_ids"]) for c in ref["cases"]], "reference JSON"
    from transformers import AutoTokenizer
    tok = AutoTokenizer.from_pretrained(args.hf)
    return ([(t, tok(t, add_special_tokens=False)["input_ids"]) for t in PROMPTS],
            "transformers tokenizer of --hf")


def tokenizer_check(folder, ref):
    """How many reference prompt ids the fp16 folder's tokenizer reproduces (information)."""
    try:
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(folder)
        same = sum(tok(c["text"], add_special_tokens=False)["input_ids"] == c["prompt_ids"]
                   for c in ref["cases"])
        return "%d of %d" % (same, len(ref["cases"]))
    except Exception as e:  # no tokenizer files (selftest), or one transformers cannot read
        return "not checked (%s)" % type(e).__name__


def cmd_truth(args):
    import torch
    import transformers
    t0 = time.time()
    dev = args.device
    if dev == "auto":
        dev = "cuda:0" if torch.cuda.is_available() else "cpu"
    device = torch.device(dev)
    dtype = {"float32": torch.float32, "float16": torch.float16,
             "bfloat16": torch.bfloat16}[args.dtype]
    strict_fp32()
    ref = None
    if args.reference:
        with open(args.reference) as f:
            ref = json.load(f)
    model = load_hf_eager(args.hf, dtype, device)
    weights = apply_weights(model, args.recon, args.model)
    prompts, source = prompts_for(args, ref)
    probe = ref["probe_ids"] if ref is not None else probe_ids_for(model.config.vocab_size)
    greedy_tokens = len(ref["cases"][0]["greedy_ids"]) if ref is not None else GREEDY_TOKENS
    cases, full = run_cases(model, prompts, probe, device, greedy_tokens)
    name = args.name or (ref or {}).get("model_folder") or os.path.basename(
        os.path.normpath(weights["checkpoint"] or args.recon))
    try:
        bpw = float(name)
    except ValueError:
        bpw = None
    result = {
        "generator": "tests/reference/exl2_dequant_truth.py truth",
        "reference_kind": "transformers %s LlamaForCausalLM, %s, eager attention, TF32 off, on the "
                          "checkpoint's dequantized weights (exllamav2's reconstruction)"
                          % (transformers.__version__, args.dtype),
        "torch": torch.__version__, "transformers": transformers.__version__,
        "device": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
        "dtype": args.dtype, "bpw": bpw, "model_folder": name,
        "fp16_folder": os.path.abspath(args.hf),
        "quantized_under": (ref or {}).get("quantized_under"),
        "prompt_ids_from": source, "weights": weights,
        "probe_ids": probe, "cases": cases,
    }
    if ref is not None:
        result["reference"] = os.path.abspath(args.reference)
        result["reference_tokenizer_check"] = tokenizer_check(args.hf, ref)
        result["vs_reference"] = compare_reference(ref, cases, full)
    result["seconds"] = round(time.time() - t0, 1)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)) or ".", exist_ok=True)
    with open(args.out + ".tmp", "w") as f:
        json.dump(result, f, separators=(",", ":"))
    os.replace(args.out + ".tmp", args.out)
    w = weights
    print("truth %s: %d quantized layers (%d weights) from %s%s; %d unquantized tensors from the "
          "checkpoint (%d differ from the fp16 folder); %s on %s, %.1f s; wrote %s"
          % (name, w["quantized_layers"], w["quantized_weights"], args.recon,
             ", lm_head untied" if w["untied_head"] else "",
             len(w["unquantized_from_checkpoint"]), len(w["unquantized_differing_from_folder"]),
             args.dtype, result["device"], result["seconds"], args.out))
    if ref is not None:
        print(summary_line(name, args.label, result["vs_reference"]))
    return result


# --- selftest ----------------------------------------------------------------------------------

def cmd_selftest(args):
    import torch
    from safetensors.torch import save_file
    from transformers import LlamaConfig, LlamaForCausalLM
    strict_fp32()
    root = args.keep or tempfile.mkdtemp(prefix="exl2_truth_selftest_")
    os.makedirs(root, exist_ok=True)
    g = torch.Generator().manual_seed(11)
    vocab, hidden, inter, layers = 128, 32, 64, 2
    cfg = dict(vocab_size=vocab, hidden_size=hidden, intermediate_size=inter,
               num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
               head_dim=8, max_position_embeddings=256, rms_norm_eps=1e-5, rope_theta=10000.0,
               tie_word_embeddings=True, bos_token_id=1, eos_token_id=2, pad_token_id=2)
    # The fp16 folder.
    hf = os.path.join(root, "hf")
    src = LlamaForCausalLM(LlamaConfig(**cfg)).eval()
    with torch.no_grad():
        for p in src.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.2)
    src.half().save_pretrained(hf)
    folder_sd = {k: v.clone() for k, v in src.state_dict().items()}

    # The fake checkpoint (another embedding and final norm, stand-in q tensors) and recon dump.
    ckpt = os.path.join(root, "ckpt")
    recon_dir = os.path.join(root, "recon")
    os.makedirs(ckpt, exist_ok=True)
    os.makedirs(recon_dir, exist_ok=True)
    keys = ["model.layers.%d.%s" % (i, m) for i in range(layers)
            for m in ("self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                      "self_attn.o_proj", "mlp.up_proj", "mlp.down_proj", "mlp.gate_proj")]
    keys.append("lm_head")
    recon, manifest_layers, ck = {}, [], {}
    for key in keys:
        shape = tuple(src.get_submodule(key).weight.shape)
        recon[key] = (torch.randn(shape, generator=g) * 0.2).half()
        manifest_layers.append({"key": key, "in_features": shape[1], "out_features": shape[0],
                                "padded_out_features": shape[0]})
        ck[key + ".q_weight"] = torch.zeros(4, shape[0], dtype=torch.int32)
    for name, t in folder_sd.items():
        base = name[:-len(".weight")]
        if name.endswith(".weight") and base not in keys:
            ck[name] = t.clone()
    ck["model.embed_tokens.weight"] = (torch.randn(vocab, hidden, generator=g) * 0.2).half()
    ck["model.norm.weight"] = (1 + 0.1 * torch.randn(hidden, generator=g)).half()
    save_file(ck, os.path.join(ckpt, "output.safetensors"))
    save_file(recon, os.path.join(recon_dir, "recon.safetensors"))
    with open(os.path.join(recon_dir, "manifest.json"), "w") as f:
        json.dump({"generator": "selftest", "model_dir": os.path.abspath(ckpt),
                   "file": "recon.safetensors", "layers": manifest_layers}, f)

    # An independent model with the intended weights (untied head), and "exllamav2's" JSON from it.
    want = {k: v.float() for k, v in folder_sd.items()}
    for key in keys:
        want[key + ".weight"] = recon[key].float()
    want["model.embed_tokens.weight"] = ck["model.embed_tokens.weight"].float()
    want["model.norm.weight"] = ck["model.norm.weight"].float()
    ind_cfg = LlamaConfig(**dict(cfg, tie_word_embeddings=False))
    ind_cfg._attn_implementation = "eager"
    ind = LlamaForCausalLM(ind_cfg).float().eval()
    missing, unexpected = ind.load_state_dict(want, strict=False)
    assert not unexpected and all("rotary" in m for m in missing), (missing, unexpected)
    prompts = [(t, torch.randint(3, vocab, (5 + 2 * i,), generator=g).tolist())
               for i, t in enumerate(PROMPTS)]
    probe = probe_ids_for(vocab)
    ind_cases, ind_full = run_cases(ind, prompts, probe, torch.device("cpu"))
    ref_path = os.path.join(root, "exl2_smollm2_t.json")
    with open(ref_path, "w") as f:
        json.dump({"generator": "selftest", "bpw": None, "model_folder": "t",
                   "quantized_under": "matmul-test", "probe_ids": probe, "cases": ind_cases}, f)

    # The truth command on the folder + dump + checkpoint.
    out = os.path.join(root, "truth_smollm2_t.json")
    ns = argparse.Namespace(hf=hf, recon=recon_dir, reference=ref_path, out=out, model=None,
                            name=None, device="cpu", dtype="float32", label="independent")
    r = cmd_truth(ns)
    # The loaded model's weights, checked again from outside apply_weights.
    model = load_hf_eager(hf, torch.float32, torch.device("cpu"))
    info = apply_weights(model, recon_dir)
    sd = dict(model.named_parameters(remove_duplicate=False))
    for name, t in want.items():
        assert torch.equal(sd[name].detach(), t), name
    assert info["untied_head"] and info["lm_head_quantized"]
    assert set(info["unquantized_differing_from_folder"]) == {"model.embed_tokens.weight",
                                                              "model.norm.weight"}, info
    with torch.inference_mode():
        x = torch.tensor([prompts[3][1]])
        d = (model(x).logits - ind(x).logits).abs().max().item()
    assert d == 0.0, d
    s = r["vs_reference"]
    assert s["max_abs_dlogit"] < 2e-5 and s["greedy_exact"] == len(PROMPTS), s
    assert s["argmax_same"] == s["argmax_checked"] and s["top1_same"] == s["positions"], s
    # The format: exactly the keys of exl2_smollm2_reference.py's cases and positions.
    with open(out) as f:
        j = json.load(f)
    c = j["cases"][0]
    assert set(c) == {"text", "prompt_ids", "positions", "greedy_ids", "greedy_top5"}, set(c)
    assert set(c["positions"][0]) == {"top_ids", "top_logits", "lse", "probe_logits"}
    assert len(c["greedy_ids"]) == GREEDY_TOKENS and len(c["greedy_top5"][0]) == 5
    assert len(c["positions"][0]["top_ids"]) == TOP and j["probe_ids"] == probe
    assert j["quantized_under"] == "matmul-test"
    # The comparison is not trivially zero: a reference with a perturbed head.
    with torch.no_grad():
        ind.lm_head.weight.add_(0.05 * torch.randn(ind.lm_head.weight.shape, generator=g))
    bad_cases, _ = run_cases(ind, prompts, probe, torch.device("cpu"))
    s2 = compare_reference({"probe_ids": probe, "cases": bad_cases}, j["cases"], ind_full)
    assert s2["mean_abs_dlogit"] > 1e-3 and s2["mean_kl"] > 0, s2
    print(summary_line("perturbed", "selftest", s2))
    print("selftest ok: weights exact (head untied, checkpoint embedding/norm used), logits equal "
          "to an independent model (max |Δ| %.1e), JSON format as exl2_smollm2_reference.py; %s"
          % (d, root))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("truth")
    t.add_argument("--hf", required=True, help="the fp16 folder the checkpoint was made from")
    t.add_argument("--recon", required=True, help="exl2_diagnose.py recon's folder")
    t.add_argument("--reference", help="exllamav2's exl2_smollm2_<bpw>.json: prompt/probe ids "
                   "and the comparison")
    t.add_argument("--out", required=True)
    t.add_argument("--model", help="the checkpoint (unquantized tensors); default the manifest's "
                   "model_dir when it exists")
    t.add_argument("--name", help="label / model_folder (default: the reference's)")
    t.add_argument("--device", default="auto", help="auto, cpu, cuda, cuda:N")
    t.add_argument("--dtype", default="float32", choices=("float32", "float16", "bfloat16"))
    t.add_argument("--label", default="exllamav2", help="what the reference JSON is")
    s = sub.add_parser("selftest")
    s.add_argument("--keep", help="folder for the synthetic files (default: a temporary one)")
    args = ap.parse_args()
    {"truth": cmd_truth, "selftest": cmd_selftest}[args.cmd](args)


if __name__ == "__main__":
    main()
