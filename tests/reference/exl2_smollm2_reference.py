#!/usr/bin/env python3
"""SmolLM2-135M-Instruct quantized by exllamav2 0.3.2, and exllamav2's own logits on it.

Three steps (tests/gpu/exl2_reference_job.sh runs them on the GPU machine):

  gguf-to-hf  --gguf FILE --out DIR     the GGUF (Q4_1) dequantized to an fp16 safetensors folder
                                        with config.json and tokenizer files (gguf-py dequantizes,
                                        transformers reads config and tokenizer; CPU)
  quantize    --hf DIR --work DIR --out DIR --bpw 2.5,4.0,6.0
                                        exllamav2's converter (convert_exl2): one measurement pass,
                                        then one quantization per bpw, each compiled with -cf into
                                        <out>/<bpw>/ (config, tokenizer, output.safetensors)
  reference   --models DIR --out DIR    loads each <models>/<bpw>/ with exllamav2, writes
                                        <out>/exl2_smollm2_<bpw>.json: for 10 prompts, per position
                                        the top-20 logits, the log-sum-exp and the logits of 32
                                        fixed probe ids; then 32 greedy tokens with the top-5 ids of
                                        every step (full recompute per step, no cache). --bpw takes
                                        folder names, e.g. 2.5,4.0,gptq-4-g128 (GPTQ folders load too)
  evaluate    --fp16 DIR --models LABEL=DIR,... --text FILE --out FILE.json
                                        in one process: perplexity of each model on the text with
                                        Hearth's sliding windows (--ctx, --stride, as hearth-cli
                                        ppl / kld score), KL divergence and top-1 agreement against
                                        the fp16 model, all in exllamav2; and, with --logits-root
                                        ROOT --logits NAMES, the reference JSON of ROOT/<name>/ as
                                        `reference` writes it

quantize --hearth-rows ROWS.json feeds the converter Hearth's own calibration rows
(tests/gpu/calibration_rows prints them; hearth_calibration.py turns them into parquet files:
measure.parquet for the measurement pass, quant.parquet for each quantization) instead of
exllamav2's built-in set, with Hearth's rows x length. Times and peak VRAM of each converter run
go to <out>/exllamav2_quantize.json, and what exllamav2 actually tokenized is compared with
Hearth's rows (<out>/<bpw>/hearth_calibration_check.json).

quantize and reference take --attn (default matmul): exllamav2's attention path, see
exl2_common.py. As shipped (sdpa), exllamav2 0.3.2 without flash-attn/xformers attends
bidirectionally in every multi-token forward pass (calibration, forward without cache), which made
the first GPU run's checkpoints and logits garbage. matmul is its own causal matmul path
(EXLLAMA_NO_SDPA). The mode is recorded in <out>/<bpw>/hearth_attention_mode and in the JSON; a
checkpoint quantized under another mode is quantized again.

Needs exllamav2 importable (PYTHONPATH) and torch with CUDA for quantize / reference.
tests/gpu/quant_exl2_smollm2_test.cpp reads the folders and the JSON files.
"""
import argparse
import json
import math
import os
import runpy
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exl2_common import (ATTENTION_MODES, attention_info, patch_read_parquet,  # noqa: E402
                         prepare_attention)

MODE_FILE = "hearth_attention_mode"

PROMPTS = [
    "The capital of France is",
    "Here is a short poem about the sea:\n",
    "def fibonacci(n):\n    \"\"\"Return the n-th Fibonacci number.\"\"\"\n",
    "<|im_start|>user\nWhat is 17 times 23?<|im_end|>\n<|im_start|>assistant\n",
    "Once upon a time, in a village at the edge of a great forest,",
    "The three laws of thermodynamics state that",
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nName three "
    "primary colors.<|im_end|>\n<|im_start|>assistant\n",
    "1, 2, 3, 5, 8, 13, 21,",
    "Photosynthesis converts light energy into",
    "Translate to German: 'Good morning, how are you?'\nGerman:",
]
GREEDY_TOKENS = 32
TOP = 20


GGUF_NAMES = {  # llama.cpp tensor names -> Hugging Face names (per layer: blk.N.*)
    "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj", "attn_v": "self_attn.v_proj",
    "attn_output": "self_attn.o_proj", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
    "ffn_down": "mlp.down_proj", "attn_norm": "input_layernorm",
    "ffn_norm": "post_attention_layernorm",
}



def reference_case(text, ids, logits_of, probe, greedy_tokens=GREEDY_TOKENS):
    """One prompt in the reference JSON's format: per prompt position the top-TOP logits, the
    log-sum-exp and the probe logits, then a greedy continuation (full recompute per step) with
    each step's top 5. logits_of(ids) -> [len(ids), vocab] float tensor. Returns (case, logits)."""
    import torch
    logits = logits_of(ids)
    positions = []
    for p in range(len(ids)):
        row = logits[p]
        top = torch.topk(row, TOP)
        positions.append({
            "top_ids": top.indices.tolist(),
            "top_logits": [round(v, 5) for v in top.values.tolist()],
            "lse": round(torch.logsumexp(row.double(), 0).item(), 6),
            "probe_logits": [round(row[i].item(), 5) for i in probe],
        })
    seq = list(ids)
    greedy, top5 = [], []
    for _ in range(greedy_tokens):
        row = logits_of(seq)[-1]
        t5 = torch.topk(row, 5)
        top5.append(t5.indices.tolist())
        greedy.append(int(t5.indices[0]))
        seq.append(greedy[-1])
    return ({"text": text, "prompt_ids": list(ids), "positions": positions,
             "greedy_ids": greedy, "greedy_top5": top5}, logits)

def gguf_state_dict(path, heads, kv_heads):
    """The GGUF's tensors dequantized with gguf-py, under Hugging Face names, with q/k rows put back
    in rotate-half order (llama.cpp's converter interleaves them; transformers undoes it so)."""
    import numpy as np
    from gguf import GGUFReader
    from gguf.quants import dequantize
    reader = GGUFReader(path)
    sd = {}
    for t in reader.tensors:
        w = np.asarray(dequantize(t.data, t.tensor_type), dtype=np.float32)
        shape = [int(d) for d in reversed(t.shape.tolist())]
        w = w.reshape(shape)
        name = t.name
        if name == "token_embd.weight":
            hf = "model.embed_tokens.weight"
        elif name == "output_norm.weight":
            hf = "model.norm.weight"
        elif name == "output.weight":
            hf = "lm_head.weight"
        else:
            _, layer, kind, suffix = name.split(".")
            hf = "model.layers.%s.%s.%s" % (layer, GGUF_NAMES[kind], suffix)
            if kind in ("attn_q", "attn_k"):
                n = heads if kind == "attn_q" else kv_heads
                dim = w.shape[0] // n // 2
                w = w.reshape(n, dim, 2, *w.shape[1:]).swapaxes(2, 1).reshape(w.shape)
        sd[hf] = w
    return sd


def gguf_to_hf(args):
    import torch
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoTokenizer
    folder, name = os.path.split(os.path.abspath(args.gguf))
    c = AutoConfig.from_pretrained(folder, gguf_file=name)
    heads = c.num_attention_heads
    kv_heads = getattr(c, "num_key_value_heads", None) or heads
    sd = gguf_state_dict(args.gguf, heads, kv_heads)
    os.makedirs(args.out, exist_ok=True)
    tied = "lm_head.weight" not in sd
    tensors = {k: torch.from_numpy(v.copy()).to(torch.float16).contiguous() for k, v in sd.items()}
    save_file(tensors, os.path.join(args.out, "model.safetensors"), metadata={"format": "pt"})
    rope_theta = getattr(c, "rope_theta", None)
    if rope_theta is None:
        rope_theta = (getattr(c, "rope_parameters", None) or {}).get("rope_theta", 10000.0)
    # A plain Llama config that every reader understands (exllamav2 reads rope_theta, not
    # transformers 5's rope_parameters, and needs exactly one architecture).
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_hidden_layers": c.num_hidden_layers,
        "num_attention_heads": heads, "num_key_value_heads": kv_heads,
        "head_dim": getattr(c, "head_dim", None) or c.hidden_size // heads,
        "max_position_embeddings": c.max_position_embeddings, "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": float(rope_theta), "hidden_act": "silu", "attention_bias": False,
        "mlp_bias": False, "tie_word_embeddings": tied,
        "bos_token_id": c.bos_token_id, "eos_token_id": c.eos_token_id,
        "pad_token_id": c.pad_token_id, "torch_dtype": "float16",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    tok = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    tok.save_pretrained(args.out)
    print("wrote", args.out, sorted(os.listdir(args.out)))


def run_converter(argv):
    saved = sys.argv
    sys.argv = ["convert_exl2"] + argv
    try:
        runpy.run_module("exllamav2.conversion.convert_exl2", run_name="__main__")
    except SystemExit as e:  # the converter calls sys.exit() on some paths
        if e.code not in (None, 0):
            raise
    finally:
        sys.argv = saved


def read_mode(folder):
    try:
        with open(os.path.join(folder, MODE_FILE)) as f:
            return f.read().strip()
    except OSError:
        return None


def converter_run(argv, times, key):
    """Runs the converter, recording its wall time and peak VRAM (torch's allocator: what the
    converter itself holds; the CUDA context comes on top) under times[key]."""
    import torch
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    run_converter(argv)
    if cuda:
        torch.cuda.synchronize()
    times[key] = {"seconds": round(time.time() - t0, 2),
                  "peak_allocated_mib": round(torch.cuda.max_memory_allocated() / 2**20, 1)
                  if cuda else None,
                  "peak_reserved_mib": round(torch.cuda.max_memory_reserved() / 2**20, 1)
                  if cuda else None}
    print("converter run %s: %s" % (key, times[key]), flush=True)


def calibration_check(rows_json, part, work_dir):
    """What exllamav2 tokenized (its work folder's cal_data.safetensors) against Hearth's rows."""
    import hearth_calibration
    path = os.path.join(work_dir, "cal_data.safetensors")
    if not os.path.exists(path):
        return {"error": "no " + path}
    return hearth_calibration.check_cal_data(rows_json, part, path)


def quantize(args):
    prepare_attention(args.attn)  # before exllamav2 is imported (the converter runs in-process)
    print("attention mode:", args.attn, attention_info())
    os.makedirs(args.work, exist_ok=True)
    os.makedirs(args.out, exist_ok=True)
    times_path = os.path.join(args.out, "exllamav2_quantize.json")
    times = {}
    if os.path.exists(times_path):
        with open(times_path) as f:
            times = json.load(f)
    if args.hearth_rows:
        # Hearth's calibration rows, as parquet files (one for the measurement, one for the
        # quantization passes) with Hearth's rows x length.
        import hearth_calibration
        engine = patch_read_parquet()
        rows = hearth_calibration.load_rows(args.hearth_rows)
        q, m = rows["quant"], rows["measure"]
        tag = "%s-hearth-r%d-l%d-m%d-ml%d" % (args.attn, q["rows"], q["length"], m["rows"],
                                              m["length"])
        caldir = os.path.join(args.work, "cal-" + tag)
        check = hearth_calibration.make(args.hearth_rows, os.path.join(args.hf, "tokenizer.json"),
                                        caldir)
        print("Hearth calibration as parquet (read with %s): %s"
              % (engine, hearth_calibration.summary(check)), flush=True)
        counts = ["-r", str(q["rows"]), "-l", str(q["length"]), "-mr", str(m["rows"]),
                  "-ml", str(m["length"])]
        measure_args = ["-c", os.path.join(caldir, "measure.parquet")] + counts
        quant_args = ["-c", os.path.join(caldir, "quant.parquet")] + counts
        times["calibration"] = {"source": "hearth", "rows_json": os.path.abspath(args.hearth_rows),
                                "parquet_engine": engine, "parquet_check": check}
    else:
        # One measurement per attention mode and calibration length (a warm machine keeps old
        # ones).
        tag = "%s-l%d" % (args.attn, args.length)
        lengths = ["-l", str(args.length), "-ml", str(args.length)]
        measure_args = quant_args = lengths
        times["calibration"] = {"source": "exllamav2 built-in", "length": args.length}
    times["tag"] = tag
    measurement = os.path.join(args.work, "measurement-%s.json" % tag)
    if not os.path.exists(measurement):
        mdir = os.path.join(args.work, "measure-" + tag)
        converter_run(["-i", args.hf, "-o", mdir, "-nr", "-om", measurement] + measure_args,
                      times, "measurement")
        if args.hearth_rows:
            times["measurement"]["calibration_vs_hearth"] = calibration_check(
                args.hearth_rows, "measure", mdir)
            print("measurement calibration vs Hearth's rows:",
                  times["measurement"]["calibration_vs_hearth"], flush=True)
        with open(times_path, "w") as f:
            json.dump(times, f, indent=1)
    for bpw in args.bpw.split(","):
        out = os.path.join(args.out, bpw)
        if os.path.exists(os.path.join(out, "output.safetensors")) and read_mode(out) == tag:
            print("already quantized:", out, tag)
            continue
        if os.path.exists(out):
            print("quantizing again (made under %s): %s" % (read_mode(out), out))
            shutil.rmtree(out)
        stale = os.path.join(args.out, "exl2_smollm2_%s.json" % bpw)  # exllamav2's logits on it
        if os.path.exists(stale):
            os.remove(stale)
        qdir = os.path.join(args.work, "q%s-%s" % (bpw, tag))
        converter_run(["-i", args.hf, "-o", qdir, "-nr", "-m", measurement, "-b", bpw, "-hb", "6",
                       "-cf", out] + quant_args, times, bpw)
        times[bpw]["tag"] = tag
        if args.hearth_rows:
            c = calibration_check(args.hearth_rows, "quant", qdir)
            times[bpw]["calibration_vs_hearth"] = c
            with open(os.path.join(out, "hearth_calibration_check.json"), "w") as f:
                json.dump(c, f)
            print("%s calibration vs Hearth's rows: %s" % (bpw, c), flush=True)
        with open(os.path.join(out, MODE_FILE), "w") as f:
            f.write(tag + "\n")
        with open(times_path, "w") as f:
            json.dump(times, f, indent=1)
    with open(times_path, "w") as f:
        json.dump(times, f, indent=1)


def load_exl2_model(folder, attn, ctx=512):
    """An exllamav2 model (EXL2, GPTQ or fp16 folder) for forward passes of up to ctx tokens
    without a cache, under the attention mode set by prepare_attention()."""
    from exllamav2 import ExLlamaV2, ExLlamaV2Config
    config = ExLlamaV2Config(folder)
    n = max(512, ctx)
    config.max_seq_len = n
    config.max_input_len = n
    config.max_attention_size = n * n
    config.no_sdpa = attn == "matmul"
    model = ExLlamaV2(config)
    model.load()
    return config, model


def unload(model):
    import torch
    model.unload()
    del model
    torch.cuda.empty_cache()


def bpw_of(name):
    try:
        return float(name)
    except ValueError:
        return None


def reference_json(folder, name, attn, out_dir):
    """exllamav2's logits and greedy continuations on PROMPTS for the model in `folder`, written
    to out_dir/exl2_smollm2_<name>.json."""
    import torch
    from exllamav2 import ExLlamaV2Tokenizer
    from exllamav2.version import __version__ as exl2_version
    config, model = load_exl2_model(folder, attn)
    tokenizer = ExLlamaV2Tokenizer(config)
    vocab = config.vocab_size
    gen = torch.Generator().manual_seed(7)
    probe = sorted(set(torch.randint(0, vocab, (64,), generator=gen).tolist()))[:32]

    def logits_of(ids):
        with torch.inference_mode():
            out = model.forward(torch.tensor([ids], dtype=torch.long))
        return out[0, :, :vocab].float().cpu()  # padded head columns dropped

    cases = []
    for text in PROMPTS:
        ids = tokenizer.encode(text, add_bos=False, encode_special_tokens=True)[0].tolist()
        cases.append(reference_case(text, ids, logits_of, probe)[0])
    result = {
        "generator": "tests/reference/exl2_smollm2_reference.py",
        "exllamav2": exl2_version, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(0), "bpw": bpw_of(name), "model_folder": name,
        "attention_mode": attn, "attention": attention_info(config),
        "quantized_under": read_mode(folder),
        "probe_ids": probe, "cases": cases,
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "exl2_smollm2_%s.json" % name)
    with open(path, "w") as f:
        json.dump(result, f, separators=(",", ":"))
    print("wrote", path, os.path.getsize(path), "bytes", flush=True)
    unload(model)


def reference(args):
    prepare_attention(args.attn)
    for name in args.bpw.split(","):
        reference_json(os.path.join(args.models, name), name, args.attn, args.out)


def eval_windows(n, ctx, stride):
    """Hearth's sliding windows (engine/quantizer/model_eval.cpp): (begin, end, first
    scored row); window position j predicts token j + 1, each token is scored once."""
    out, prev_end, begin = [], 0, 0
    while begin < n:
        end = min(begin + ctx, n)
        first = max(0, prev_end - begin - 1)
        out.append((begin, end, first))
        prev_end = end
        if end == n:
            break
        begin += stride
    return out


def eval_ids(args):
    """The evaluation tokens: Hearth's own tokenization (--ids, a JSON list from hearth-cli
    tokenize) when given, else the fp16 folder's tokenizer without special tokens added."""
    from tokenizers import Tokenizer
    with open(args.text, encoding="utf-8") as f:
        text = f.read()
    tok = Tokenizer.from_file(os.path.join(args.fp16, "tokenizer.json"))
    own = tok.encode(text, add_special_tokens=False).ids
    info = {"text": os.path.abspath(args.text), "tokenizer_tokens": len(own)}
    ids = own
    if args.ids:
        try:
            with open(args.ids) as f:
                ids = [int(i) for i in json.load(f)]
            info["hearth_tokens"] = len(ids)
            info["hearth_equals_tokenizer"] = ids == own
        except (OSError, ValueError, TypeError) as e:
            ids = own
            info["hearth_ids_error"] = "%s unreadable (%r): the tokenizer's ids are used" % (
                args.ids, e)
    if args.max_tokens and len(ids) > args.max_tokens:
        ids = ids[:args.max_tokens]
    info["tokens"] = len(ids)
    return ids, info


def model_log_probs(model, vocab, ids, windows):
    """Per window: log-probabilities [rows, vocab] (fp32, on the GPU) of the scored rows."""
    import torch
    out = []
    for begin, end, first in windows:
        with torch.inference_mode():
            logits = model.forward(torch.tensor([ids[begin:end]], dtype=torch.long))
            out.append(torch.log_softmax(logits[0, first:end - begin - 1, :vocab].float(), dim=-1))
    return out


def score(lps, ref_lps, ids, windows):
    """Hearth's kld statistics: perplexity, mean / p99.9 / max KL(reference || model), top-1
    agreement (argmax equal)."""
    import torch
    nll, kls, agree, n = 0.0, [], 0, 0
    for lp, ref, (begin, end, first) in zip(lps, ref_lps, windows):
        with torch.inference_mode():
            targets = torch.tensor(ids[begin + first + 1:end], device=lp.device)
            nll -= lp.gather(1, targets[:, None]).double().sum().item()
            kl = (ref.exp() * (ref - lp)).double().sum(-1).clamp_min(0)
            kls += kl.tolist()
            agree += int((lp.argmax(-1) == ref.argmax(-1)).sum().item())
        n += lp.shape[0]
    s = sorted(kls)
    p999 = s[min(len(s) - 1, max(0, math.ceil(0.999 * len(s)) - 1))]
    return {"tokens": n, "nll": nll / n, "perplexity": math.exp(nll / n),
            "kl_mean": sum(kls) / n, "kl_p999": p999, "kl_max": s[-1], "top1_agreement": agree / n}


def evaluate(args):
    """One process for every exllamav2 evaluation of a stage (loading torch and the extension
    once): reference JSONs (--logits) and perplexity / KL on held-out text (--models)."""
    prepare_attention(args.attn)
    import torch
    from exllamav2.version import __version__ as exl2_version
    result = {"generator": "tests/reference/exl2_smollm2_reference.py evaluate",
              "exllamav2": exl2_version, "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0), "attention_mode": args.attn,
              "ctx": args.ctx, "stride": args.stride or max(1, args.ctx // 2), "models": {},
              "logits": {}}
    if args.logits:
        for name in args.logits.split(","):
            folder = os.path.join(args.logits_root, name)
            t0 = time.time()
            try:
                reference_json(folder, name, args.attn, args.logits_root)
                result["logits"][name] = {"seconds": round(time.time() - t0, 2)}
            except Exception as e:  # one model that exllamav2 cannot load must not stop the rest
                print("reference %s FAILED: %r" % (folder, e), flush=True)
                result["logits"][name] = {"error": repr(e)}
    if args.models:
        ids, info = eval_ids(args)
        result["text"] = info
        windows = eval_windows(len(ids), args.ctx, result["stride"])
        config, model = load_exl2_model(args.fp16, args.attn, args.ctx)
        vocab = config.vocab_size
        ref = model_log_probs(model, vocab, ids, windows)
        unload(model)
        result["models"]["fp16"] = dict(score(ref, ref, ids, windows), folder=args.fp16)
        print("fp16: %s" % result["models"]["fp16"], flush=True)
        for item in args.models.split(","):
            label, folder = item.split("=", 1)
            if not os.path.exists(os.path.join(folder, "config.json")):
                result["models"][label] = {"folder": folder, "error": "missing"}
                continue
            t0 = time.time()
            try:
                config, model = load_exl2_model(folder, args.attn, args.ctx)
                lps = model_log_probs(model, config.vocab_size, ids, windows)
                unload(model)
                r = score(lps, ref, ids, windows)
                del lps
            except Exception as e:
                print("evaluate %s FAILED: %r" % (folder, e), flush=True)
                result["models"][label] = {"folder": folder, "error": repr(e)}
                continue
            r.update(folder=folder, seconds=round(time.time() - t0, 2),
                     quantized_under=read_mode(folder))
            result["models"][label] = r
            print("%s: ppl %.4f, KL %.5f, top-1 %.4f" % (label, r["perplexity"], r["kl_mean"],
                                                          r["top1_agreement"]), flush=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)
    print("wrote", args.out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("gguf-to-hf")
    a.add_argument("--gguf", required=True)
    a.add_argument("--out", required=True)
    q = sub.add_parser("quantize")
    q.add_argument("--hf", required=True)
    q.add_argument("--work", required=True)
    q.add_argument("--out", required=True)
    q.add_argument("--bpw", default="2.5,4.0,6.0")
    q.add_argument("--length", type=int, default=2048, help="calibration row length (-l, -ml)")
    q.add_argument("--attn", choices=ATTENTION_MODES, default="matmul")
    q.add_argument("--hearth-rows", help="Hearth's calibration rows (tests/gpu/calibration_rows "
                   "output): exllamav2 calibrates on them (parquet) instead of its built-in set")
    r = sub.add_parser("reference")
    r.add_argument("--models", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--bpw", default="2.5,4.0,6.0")
    r.add_argument("--attn", choices=ATTENTION_MODES, default="matmul")
    e = sub.add_parser("evaluate")
    e.add_argument("--out", required=True, help="JSON file to write")
    e.add_argument("--fp16", required=True, help="the unquantized folder (reference for KL)")
    e.add_argument("--models", default="", help="LABEL=FOLDER,... to score on --text")
    e.add_argument("--text", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "../../resources/calibration/heldout.txt"))
    e.add_argument("--ids", help="JSON list of the text's token ids (hearth-cli tokenize)")
    e.add_argument("--ctx", type=int, default=512)
    e.add_argument("--stride", type=int, default=0, help="0: ctx / 2 (Hearth's default)")
    e.add_argument("--max-tokens", type=int, default=0)
    e.add_argument("--logits-root", default="")
    e.add_argument("--logits", default="", help="model folder names under --logits-root")
    e.add_argument("--attn", choices=ATTENTION_MODES, default="matmul")
    args = ap.parse_args()
    {"gguf-to-hf": gguf_to_hf, "quantize": quantize, "reference": reference,
     "evaluate": evaluate}[args.cmd](args)


if __name__ == "__main__":
    main()
