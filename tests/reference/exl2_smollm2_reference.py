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
                                        every step (full recompute per step, no cache)

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
import os
import runpy
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from exl2_common import ATTENTION_MODES, attention_info, prepare_attention  # noqa: E402

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


def quantize(args):
    prepare_attention(args.attn)  # before exllamav2 is imported (the converter runs in-process)
    print("attention mode:", args.attn, attention_info())
    os.makedirs(args.work, exist_ok=True)
    # One measurement per attention mode and calibration length (a warm machine keeps old ones).
    tag = "%s-l%d" % (args.attn, args.length)
    measurement = os.path.join(args.work, "measurement-%s.json" % tag)
    lengths = ["-l", str(args.length), "-ml", str(args.length)]
    if not os.path.exists(measurement):
        run_converter(["-i", args.hf, "-o", os.path.join(args.work, "measure-" + tag), "-nr",
                       "-om", measurement] + lengths)
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
        run_converter(["-i", args.hf, "-o", os.path.join(args.work, "q%s-%s" % (bpw, tag)), "-nr",
                       "-m", measurement, "-b", bpw, "-hb", "6", "-cf", out] + lengths)
        with open(os.path.join(out, MODE_FILE), "w") as f:
            f.write(tag + "\n")


def reference(args):
    prepare_attention(args.attn)
    import torch
    from exllamav2 import ExLlamaV2, ExLlamaV2Config, ExLlamaV2Tokenizer
    from exllamav2.version import __version__ as exl2_version
    os.makedirs(args.out, exist_ok=True)
    for bpw in args.bpw.split(","):
        folder = os.path.join(args.models, bpw)
        config = ExLlamaV2Config(folder)
        config.max_seq_len = 512
        config.max_input_len = 512
        config.max_attention_size = 512 * 512
        config.no_sdpa = args.attn == "matmul"
        model = ExLlamaV2(config)
        model.load()
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
            for _ in range(GREEDY_TOKENS):
                row = logits_of(seq)[-1]
                t5 = torch.topk(row, 5)
                top5.append(t5.indices.tolist())
                greedy.append(int(t5.indices[0]))
                seq.append(greedy[-1])
            cases.append({"text": text, "prompt_ids": ids, "positions": positions,
                          "greedy_ids": greedy, "greedy_top5": top5})
        result = {
            "generator": "tests/reference/exl2_smollm2_reference.py",
            "exllamav2": exl2_version, "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0), "bpw": float(bpw), "model_folder": bpw,
            "attention_mode": args.attn, "attention": attention_info(config),
            "quantized_under": read_mode(folder),
            "probe_ids": probe, "cases": cases,
        }
        path = os.path.join(args.out, "exl2_smollm2_%s.json" % bpw)
        with open(path, "w") as f:
            json.dump(result, f, separators=(",", ":"))
        print("wrote", path, os.path.getsize(path), "bytes")
        model.unload()
        del model


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
    r = sub.add_parser("reference")
    r.add_argument("--models", required=True)
    r.add_argument("--out", required=True)
    r.add_argument("--bpw", default="2.5,4.0,6.0")
    r.add_argument("--attn", choices=ATTENTION_MODES, default="matmul")
    args = ap.parse_args()
    {"gguf-to-hf": gguf_to_hf, "quantize": quantize, "reference": reference}[args.cmd](args)


if __name__ == "__main__":
    main()
