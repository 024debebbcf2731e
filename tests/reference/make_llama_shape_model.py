#!/usr/bin/env python3
"""A random-weight fp16 Llama model folder of a real model's shape, with only N decoder layers,
for timing Hearth's quantizer (hearth-cli quantize) where the real weights are not at hand.

Default shape: Llama-3-8B (hidden 4096, intermediate 14336, 32 heads, 8 kv heads, head dim 128,
vocab 128256, untied head, rope theta 500000), `--layers` decoder layers (default 2; the real
model has 32). The weights are Gaussian (std 0.02, norms 1), so the output is useless as a
model, but every matrix has the real shape, which is what sets the quantizer's time and memory.

The folder gets config.json, model.safetensors (written tensor by tensor: a few GB at the 8B
shape, never all in memory) and the tokenizer files of --tokenizer-from (an HF folder such as
SmolLM2's fp16 folder: tokenizer.json, tokenizer_config.json, chat_template.jinja): the
quantizer tokenizes its calibration text with them. SmolLM2's 49152 ids all lie below the
128256-row embedding, so every calibration id is valid; config.json takes its BOS/EOS ids.

  make_llama_shape_model.py --out DIR --tokenizer-from SMOLLM2_FP16_DIR [--layers 2]
      [--hidden 4096 --intermediate 14336 --heads 32 --kv-heads 8 --vocab 128256] [--seed 0]

Uses torch on the GPU for the random numbers when there is one (seconds for the 8B shape),
numpy otherwise.
"""
import argparse
import json
import os
import shutil
import struct
import time

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja",
                   "special_tokens_map.json", "generation_config.json")


def tensor_list(a):
    H, I, V = a.hidden, a.intermediate, a.vocab
    hd = a.head_dim or H // a.heads
    q, kv = a.heads * hd, a.kv_heads * hd
    out = [("model.embed_tokens.weight", (V, H), "w")]
    for i in range(a.layers):
        p = "model.layers.%d." % i
        out += [(p + "input_layernorm.weight", (H,), "one"),
                (p + "self_attn.q_proj.weight", (q, H), "w"),
                (p + "self_attn.k_proj.weight", (kv, H), "w"),
                (p + "self_attn.v_proj.weight", (kv, H), "w"),
                (p + "self_attn.o_proj.weight", (H, q), "w"),
                (p + "post_attention_layernorm.weight", (H,), "one"),
                (p + "mlp.gate_proj.weight", (I, H), "w"),
                (p + "mlp.up_proj.weight", (I, H), "w"),
                (p + "mlp.down_proj.weight", (H, I), "w")]
    out.append(("model.norm.weight", (H,), "one"))
    if not a.tied:
        out.append(("lm_head.weight", (V, H), "w"))
    return out


class Random:
    """fp16 bytes of N(0, std) numbers: torch on the GPU if possible, else numpy."""

    def __init__(self, seed, std):
        self.std = std
        self.torch = None
        try:
            import torch
            if torch.cuda.is_available():
                self.torch = torch
                self.gen = torch.Generator(device="cuda").manual_seed(seed)
        except ImportError:
            pass
        if self.torch is None:
            import numpy as np
            self.np = np
            self.rng = np.random.default_rng(seed)

    def normal_bytes(self, n):
        if self.torch is not None:
            t = self.torch.randn(n, generator=self.gen, device="cuda", dtype=self.torch.float32)
            return (t * self.std).to(self.torch.float16).cpu().numpy().tobytes()
        x = self.rng.standard_normal(n, dtype=self.np.float32) * self.std
        return x.astype(self.np.float16).tobytes()

    def ones_bytes(self, n):
        if self.torch is not None:
            return self.torch.ones(n, dtype=self.torch.float16).numpy().tobytes()
        return self.np.ones(n, dtype=self.np.float16).tobytes()


def write_safetensors(path, tensors, rnd, chunk=1 << 26):
    header, offset = {}, 0
    for name, shape, _ in tensors:
        n = 1
        for d in shape:
            n *= d
        header[name] = {"dtype": "F16", "shape": list(shape), "data_offsets": [offset, offset + 2 * n]}
        offset += 2 * n
    header["__metadata__"] = {"format": "pt"}
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * ((8 - len(raw) % 8) % 8)
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name, shape, kind in tensors:
            n = 1
            for d in shape:
                n *= d
            done = 0
            while done < n:
                m = min(chunk, n - done)
                f.write(rnd.normal_bytes(m) if kind == "w" else rnd.ones_bytes(m))
                done += m
    os.replace(path + ".tmp", path)
    return offset


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--tokenizer-from", required=True, help="HF folder with tokenizer.json")
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--intermediate", type=int, default=14336)
    ap.add_argument("--heads", type=int, default=32)
    ap.add_argument("--kv-heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=0, help="0: hidden / heads")
    ap.add_argument("--vocab", type=int, default=128256)
    ap.add_argument("--tied", action="store_true", help="tie lm_head to the embedding")
    ap.add_argument("--rope-theta", type=float, default=500000.0)
    ap.add_argument("--std", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    t0 = time.time()
    tok_dir = a.tokenizer_from
    with open(os.path.join(tok_dir, "config.json")) as f:
        tok_config = json.load(f)
    if not os.path.exists(os.path.join(tok_dir, "tokenizer.json")):
        raise SystemExit("no tokenizer.json in " + tok_dir)
    with open(os.path.join(tok_dir, "tokenizer.json")) as f:
        tok_vocab = len(json.load(f)["model"]["vocab"])
    if tok_vocab > a.vocab:
        raise SystemExit("the tokenizer has %d ids, more than --vocab %d" % (tok_vocab, a.vocab))
    os.makedirs(a.out, exist_ok=True)
    for name in TOKENIZER_FILES:
        if os.path.exists(os.path.join(tok_dir, name)):
            shutil.copy(os.path.join(tok_dir, name), os.path.join(a.out, name))
    head_dim = a.head_dim or a.hidden // a.heads
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": a.vocab, "hidden_size": a.hidden, "intermediate_size": a.intermediate,
        "num_hidden_layers": a.layers, "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads, "head_dim": head_dim,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-5, "rope_theta": a.rope_theta,
        "hidden_act": "silu", "attention_bias": False, "mlp_bias": False,
        "tie_word_embeddings": bool(a.tied),
        "bos_token_id": tok_config.get("bos_token_id"), "eos_token_id": tok_config.get("eos_token_id"),
        "torch_dtype": "float16",
        "hearth_note": "random weights of Llama-3-8B's shape with %d of its 32 layers "
                       "(tests/reference/make_llama_shape_model.py)" % a.layers,
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    rnd = Random(a.seed, a.std)
    size = write_safetensors(os.path.join(a.out, "model.safetensors"), tensor_list(a), rnd)
    print("wrote %s: %d layers, %.2f GB of fp16 weights, in %.1f s (%s)"
          % (a.out, a.layers, size / 1e9, time.time() - t0,
             "torch cuda" if rnd.torch is not None else "numpy"))


if __name__ == "__main__":
    main()
