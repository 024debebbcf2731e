#!/usr/bin/env python3
"""Reference RoPE inverse frequencies and attention factors from Hugging Face transformers'
own rope initialisation functions, for every scaling type Hearth supports.

    python3 tests/reference/rope_frequencies.py > tests/fixtures/model/rope_frequencies.json
"""
import json

import torch
import transformers
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

CASES = [
    ("default", dict(rope_theta=10000.0, head_dim=128, max_position_embeddings=4096), None, None),
    ("smollm2", dict(rope_theta=100000.0, head_dim=64, max_position_embeddings=8192), None, None),
    ("linear", dict(rope_theta=10000.0, head_dim=128, max_position_embeddings=4096),
     {"rope_type": "linear", "factor": 4.0}, None),
    ("dynamic", dict(rope_theta=10000.0, head_dim=128, max_position_embeddings=4096),
     {"rope_type": "dynamic", "factor": 2.0}, 16384),
    ("llama3", dict(rope_theta=500000.0, head_dim=128, max_position_embeddings=131072),
     {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 8192}, None),
    ("yarn", dict(rope_theta=10000.0, head_dim=128, max_position_embeddings=4096),
     {"rope_type": "yarn", "factor": 4.0}, None),
    ("yarn_original", dict(rope_theta=1000000.0, head_dim=64, max_position_embeddings=32768),
     {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 8192}, None),
]


def main():
    out = {"reference": f"transformers {transformers.__version__}", "cases": []}
    for name, kw, scaling, seq_len in CASES:
        hidden = kw["head_dim"] * 8
        cfg = LlamaConfig(hidden_size=hidden, num_attention_heads=8, num_key_value_heads=8,
                          rope_theta=kw["rope_theta"], head_dim=kw["head_dim"],
                          max_position_embeddings=kw["max_position_embeddings"],
                          rope_scaling=scaling)
        rope_type = scaling["rope_type"] if scaling else "default"
        if rope_type == "default":
            fn = None
            try:
                fn = ROPE_INIT_FUNCTIONS["default"]
            except KeyError:
                pass
            if fn is None:
                base = kw["rope_theta"]
                dim = kw["head_dim"]
                inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
                factor = 1.0
            else:
                inv, factor = fn(cfg, "cpu")
        elif rope_type == "dynamic":
            inv, factor = ROPE_INIT_FUNCTIONS["dynamic"](cfg, "cpu", seq_len=seq_len)
        else:
            inv, factor = ROPE_INIT_FUNCTIONS[rope_type](cfg, "cpu")
        out["cases"].append({
            "name": name, **kw, "rope_scaling": scaling, "seq_len": seq_len,
            "inv_freq": [float(x) for x in inv.float()], "attention_factor": float(factor),
        })
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
