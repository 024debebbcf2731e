#!/usr/bin/env python3
"""Reference fixtures for engine/io's safetensors reader and config.json parser (tests/unit/io).

Writes, under tests/fixtures/io/:
  safetensors_files.json  small files written by the `safetensors` package (every dtype Hearth
                          loads, a scalar, an empty tensor, metadata, a BOOL tensor) and a tiny
                          Llama saved by transformers' save_pretrained with a small shard size
                          (sharded safetensors + model.safetensors.index.json + config.json +
                          generation_config.json). Files are stored base64-encoded; for every
                          tensor the expected dtype, shape and raw bytes (hex) or a checksum.
  hf_configs.json         config.json / generation_config.json texts of the shapes real Llama and
                          Mistral checkpoints use, each with the values transformers reads from
                          it (LlamaConfig / MistralConfig / GenerationConfig).

Needs: pip install numpy torch transformers safetensors
Run:   python3 tests/reference/io_safetensors_reference.py
"""
import base64
import json
import os
import tempfile

import numpy as np
import torch
from safetensors.torch import save_file

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fixtures", "io")


def b64(path):
    with open(path, "rb") as f:
        return base64.b64encode(f.read()).decode()


def byte_checksum(raw: bytes) -> int:
    """sum of byte[i] * (i + 1) mod 2^64: exact and order-sensitive."""
    b = np.frombuffer(raw, dtype=np.uint8).astype(np.uint64)
    w = np.arange(1, b.size + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int((b * w).sum(dtype=np.uint64))


def tensor_bytes(t: torch.Tensor) -> bytes:
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


DTYPE_NAMES = {
    torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16", torch.int32: "I32",
    torch.int16: "I16", torch.int8: "I8", torch.uint8: "U8", torch.int64: "I64",
    torch.float64: "F64", torch.uint16: "U16", torch.uint32: "U32", torch.bool: "BOOL",
}


def single_files(tmp):
    g = torch.Generator().manual_seed(7)
    tensors = {
        "f32": torch.randn(3, 5, generator=g),
        "f16": torch.randn(2, 3, 4, generator=g).half(),
        "bf16": torch.randn(7, generator=g).bfloat16(),
        "i32": torch.randint(-2**31, 2**31 - 1, (4, 2), generator=g, dtype=torch.int64).int(),
        "i16": torch.randint(-2**15, 2**15 - 1, (5,), generator=g).to(torch.int16),
        "i8": torch.randint(-128, 127, (3, 3), generator=g).to(torch.int8),
        "u8": torch.randint(0, 255, (6,), generator=g).to(torch.uint8),
        "i64": torch.randint(-2**40, 2**40, (2, 2), generator=g),
        "f64": torch.randn(3, generator=g).double(),
        "u16": torch.randint(0, 65535, (3,), generator=g).to(torch.uint16),
        "u32": torch.randint(0, 2**31, (2,), generator=g).to(torch.uint32),
        "scalar": torch.tensor(3.5),
        "empty": torch.zeros(0, 4),
        "model.layers.0.self_attn.q_proj.weight": torch.randn(4, 4, generator=g).half(),
    }
    files = {}
    expected = {}
    path = os.path.join(tmp, "mixed.safetensors")
    save_file(tensors, path, metadata={"format": "pt", "note": "written by safetensors"})
    files["mixed.safetensors"] = b64(path)
    expected["mixed.safetensors"] = {
        "metadata": {"format": "pt", "note": "written by safetensors"},
        "tensors": {n: {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "hex": tensor_bytes(t).hex()} for n, t in tensors.items()},
    }
    path = os.path.join(tmp, "bool.safetensors")
    save_file({"mask": torch.tensor([True, False, True])}, path)
    files["bool.safetensors"] = b64(path)
    return files, expected


def tiny_llama(tmp):
    from transformers import LlamaConfig, LlamaForCausalLM, GenerationConfig
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=128, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                         rms_norm_eps=1e-5, rope_theta=50000.0, tie_word_embeddings=False,
                         bos_token_id=1, eos_token_id=2)
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=1, eos_token_id=[2, 5])
    out = os.path.join(tmp, "tiny_llama")
    model.save_pretrained(out, max_shard_size="20KB")
    files = {name: b64(os.path.join(out, name)) for name in sorted(os.listdir(out))}
    state = model.state_dict()
    tensors = {}
    for name, t in state.items():
        raw = tensor_bytes(t)
        tensors[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                         "nbytes": len(raw), "checksum": byte_checksum(raw)}
    return files, tensors


# Config shapes of real checkpoints (values as published; vocab and sizes where they matter).
CONFIGS = {
    "llama2_7b": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 4096, "rms_norm_eps": 1e-05,
        "vocab_size": 32000, "bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0,
        "tie_word_embeddings": False, "torch_dtype": "float16", "rope_scaling": None,
        "hidden_act": "silu"}, {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 0}),
    "llama31_8b_instruct": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 131072, "rms_norm_eps": 1e-05,
        "rope_theta": 500000.0, "vocab_size": 128256, "bos_token_id": 128000,
        "eos_token_id": [128001, 128008, 128009], "attention_bias": False, "mlp_bias": False,
        "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"},
        {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}),
    "llama32_1b": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
        "head_dim": 64, "intermediate_size": 8192, "num_attention_heads": 32,
        "num_hidden_layers": 16, "num_key_value_heads": 8, "max_position_embeddings": 131072,
        "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "vocab_size": 128256,
        "bos_token_id": 128000, "eos_token_id": 128001,
        "rope_scaling": {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                         "original_max_position_embeddings": 8192, "rope_type": "llama3"},
        "tie_word_embeddings": True, "torch_dtype": "bfloat16"},
        {"bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]}),
    "mistral_7b_v01": ({
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 4096,
        "intermediate_size": 14336, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 8, "max_position_embeddings": 32768, "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0, "sliding_window": 4096, "vocab_size": 32000, "bos_token_id": 1,
        "eos_token_id": 2, "tie_word_embeddings": False, "torch_dtype": "bfloat16"}, None),
    "mistral_nemo": ({
        "architectures": ["MistralForCausalLM"], "model_type": "mistral", "hidden_size": 5120,
        "head_dim": 128, "intermediate_size": 14336, "num_attention_heads": 32,
        "num_hidden_layers": 40, "num_key_value_heads": 8, "max_position_embeddings": 1024000,
        "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "sliding_window": None,
        "vocab_size": 131072, "bos_token_id": 1, "eos_token_id": 2,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}, None),
    "smollm2_135m": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 576,
        "intermediate_size": 1536, "num_attention_heads": 9, "num_hidden_layers": 30,
        "num_key_value_heads": 3, "max_position_embeddings": 8192, "rms_norm_eps": 1e-05,
        "rope_theta": 100000, "rope_scaling": None, "vocab_size": 49152, "bos_token_id": 1,
        "eos_token_id": 2, "pad_token_id": 2, "tie_word_embeddings": True,
        "torch_dtype": "bfloat16", "attention_bias": False, "mlp_bias": False,
        "pretraining_tp": 1, "is_llama_config": True, "rope_interleaved": False},
        {"bos_token_id": 1, "eos_token_id": 2, "pad_token_id": 2}),
    "deepseek_coder_linear": ({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096,
        "intermediate_size": 11008, "num_attention_heads": 32, "num_hidden_layers": 32,
        "num_key_value_heads": 32, "max_position_embeddings": 16384, "rms_norm_eps": 1e-06,
        "rope_theta": 100000, "rope_scaling": {"factor": 4.0, "type": "linear"},
        "vocab_size": 32256, "bos_token_id": 32013, "eos_token_id": 32014,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}, None),
    "yarn_both_keys": ({
        "architectures": ["LlamaForCausalLM"], "hidden_size": 256, "intermediate_size": 512,
        "num_attention_heads": 8, "num_hidden_layers": 2, "num_key_value_heads": 2,
        "max_position_embeddings": 32768, "vocab_size": 1000, "rope_theta": 10000.0,
        "rope_scaling": {"type": "yarn", "rope_type": "yarn", "factor": 4.0,
                         "original_max_position_embeddings": 8192, "beta_fast": 16.0,
                         "beta_slow": 2.0, "attention_factor": 1.2},
        "eos_token_id": 3}, None),
    "dynamic_with_auto_map": ({
        "architectures": ["LlamaForCausalLM"], "auto_map": {"AutoModel": "modeling_x.XModel"},
        "hidden_size": 128, "intermediate_size": 256, "num_attention_heads": 4,
        "num_hidden_layers": 2, "max_position_embeddings": 4096, "vocab_size": 500,
        "rope_scaling": {"type": "dynamic", "factor": 2.0}, "eos_token_id": 2,
        "quantization_config": {"quant_method": "exl2", "version": "0.3.2", "bits": 4.125,
                                "head_bits": 6}}, None),
}


def expected_from_transformers(config: dict, generation: dict | None) -> dict:
    from transformers import LlamaConfig, MistralConfig, GenerationConfig
    cls = MistralConfig if config["architectures"][0] == "MistralForCausalLM" else LlamaConfig
    c = cls.from_dict(config)
    rope = dict(c.rope_parameters or {})
    # Hearth does not invent token ids that a config does not give (transformers' LlamaConfig
    # defaults bos 1 / eos 2); the tokenizer knows them. Compare only what the files say.
    eos = c.eos_token_id if "eos_token_id" in config else None
    bos = c.bos_token_id if "bos_token_id" in config else None
    if bos is None and generation is not None:
        bos = generation.get("bos_token_id")
    if generation is not None:
        g = GenerationConfig.from_dict(generation)
        if g.eos_token_id is not None:
            eos = g.eos_token_id
    eos = [] if eos is None else (eos if isinstance(eos, list) else [eos])
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    e = {
        "architecture": config["architectures"][0],
        "vocab_size": c.vocab_size, "hidden_size": c.hidden_size,
        "intermediate_size": c.intermediate_size, "num_layers": c.num_hidden_layers,
        "num_heads": c.num_attention_heads, "num_kv_heads": c.num_key_value_heads,
        "head_dim": head_dim, "rms_norm_eps": c.rms_norm_eps,
        "rope_theta": float(rope.get("rope_theta")),
        "rope_type": rope.get("rope_type", "default"),
        "tie_word_embeddings": c.tie_word_embeddings,
        "attention_bias": bool(getattr(c, "attention_bias", False)),
        "mlp_bias": bool(getattr(c, "mlp_bias", False)),
        "bos_token_id": bos, "eos_token_ids": eos, "pad_token_id": c.pad_token_id,
        "max_position_embeddings": c.max_position_embeddings,
        "sliding_window": config.get("sliding_window"),
        "torch_dtype": config.get("torch_dtype", ""),
        "has_quantization_config": "quantization_config" in config,
    }
    for key in ("factor", "low_freq_factor", "high_freq_factor", "original_max_position_embeddings",
                "beta_fast", "beta_slow", "attention_factor"):
        if key in rope:
            e["rope_" + key] = rope[key]
    return e


def main():
    os.makedirs(OUT, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        files, expected = single_files(tmp)
        llama_files, llama_tensors = tiny_llama(tmp)
    with open(os.path.join(OUT, "safetensors_files.json"), "w") as f:
        json.dump({"files": files, "expected": expected,
                   "tiny_llama": {"files": llama_files, "tensors": llama_tensors}}, f, indent=1)
    configs = {}
    for name, (config, generation) in CONFIGS.items():
        configs[name] = {
            "config": json.dumps(config, indent=2),
            "generation_config": None if generation is None else json.dumps(generation),
            "expected": expected_from_transformers(config, generation),
        }
    with open(os.path.join(OUT, "hf_configs.json"), "w") as f:
        json.dump(configs, f, indent=1)
    print("wrote", OUT)


if __name__ == "__main__":
    main()
