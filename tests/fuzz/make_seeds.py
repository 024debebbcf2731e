#!/usr/bin/env python3
"""Seed corpora for the engine/io fuzz targets (standard library only).

Usage: python3 tests/fuzz/make_seeds.py OUT_DIR
Writes OUT_DIR/fuzz_gguf, fuzz_safetensors, fuzz_safetensors_index, fuzz_hf_config and
fuzz_lora_adapter (PEFT folders and GGUF adapters for a small Llama shape): small
valid inputs of every shape the parsers accept (GGUF v2/v3 with every metadata type, nested
arrays, alignment, every dequantizable tensor type, a tiny llama model; safetensors files written
by the `safetensors` package and transformers, taken from tests/fixtures/io; real-shaped
config.json files), plus a few near-misses.
"""
import base64
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "io")

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
# ggml types: (number, block elements, block bytes)
GGML = {"F32": (0, 1, 4), "F16": (1, 1, 2), "Q4_0": (2, 32, 18), "Q4_1": (3, 32, 20),
        "Q5_0": (6, 32, 22), "Q5_1": (7, 32, 24), "Q8_0": (8, 32, 34), "Q4_K": (12, 256, 144),
        "Q5_K": (13, 256, 176), "Q6_K": (14, 256, 210), "BF16": (30, 1, 2)}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(vtype, v):
    fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
           BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}
    if vtype == STRING:
        return gstr(v)
    if vtype == ARRAY:
        etype, items = v
        return struct.pack("<IQ", etype, len(items)) + b"".join(value(etype, x) for x in items)
    return struct.pack(fmt[vtype], v)


def gguf(kvs, tensors, version=3, alignment=32):
    """kvs: [(key, type, value)]; tensors: [(name, dims, ggml type name, data bytes)]."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, vtype, v in kvs:
        out += gstr(key) + struct.pack("<I", vtype) + value(vtype, v)
    offset = 0
    for name, dims, tname, data in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", GGML[tname][0], offset)
        offset += (len(data) + alignment - 1) // alignment * alignment
    out += b"\0" * (-len(out) % alignment)
    for _, _, _, data in tensors:
        out += data + b"\0" * (-len(data) % alignment)
    return out


def tensor_bytes(tname, elements, seed):
    _, be, bb = GGML[tname]
    n = elements // be * bb
    data = bytearray((seed * 31 + i * 7) & 0xff for i in range(n))
    if tname in ("Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q4_K", "Q5_K"):
        for blk in range(elements // be):  # sane fp16 scale (0.5) at the block start
            data[blk * bb:blk * bb + 2] = struct.pack("<e", 0.5)
    if tname == "Q6_K":
        for blk in range(elements // be):
            data[blk * bb + 208:blk * bb + 210] = struct.pack("<e", 0.25)
    return bytes(data)


def llama_kvs(vocab=8, hidden=16, heads=4, kv_heads=2, layers=1):
    tokens = [f"t{i}" for i in range(vocab)]
    return [
        ("general.architecture", STRING, "llama"), ("general.name", STRING, "Seed"),
        ("llama.block_count", U32, layers), ("llama.context_length", U32, 256),
        ("llama.embedding_length", U32, hidden), ("llama.feed_forward_length", U32, 32),
        ("llama.attention.head_count", U32, heads), ("llama.attention.head_count_kv", U32, kv_heads),
        ("llama.rope.freq_base", F32, 10000.0), ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
        ("llama.rope.dimension_count", U32, hidden // heads), ("llama.vocab_size", U32, vocab),
        ("tokenizer.ggml.model", STRING, "gpt2"),
        ("tokenizer.ggml.tokens", ARRAY, (STRING, tokens)),
        ("tokenizer.ggml.token_type", ARRAY, (I32, [1] * vocab)),
        ("tokenizer.ggml.merges", ARRAY, (STRING, ["t 0", "t 1"])),
        ("tokenizer.ggml.bos_token_id", U32, 1), ("tokenizer.ggml.eos_token_id", U32, 2),
        ("tokenizer.chat_template", STRING, "{% for m in messages %}{{ m.content }}{% endfor %}"),
    ]


def llama_tensors(tname="F32", hidden=16, kv=8, ffn=32, vocab=8, tied=True):
    shapes = [("token_embd.weight", [hidden, vocab]), ("blk.0.attn_norm.weight", [hidden]),
              ("blk.0.attn_q.weight", [hidden, hidden]), ("blk.0.attn_k.weight", [hidden, kv]),
              ("blk.0.attn_v.weight", [hidden, kv]), ("blk.0.attn_output.weight", [hidden, hidden]),
              ("blk.0.ffn_norm.weight", [hidden]), ("blk.0.ffn_gate.weight", [hidden, ffn]),
              ("blk.0.ffn_up.weight", [hidden, ffn]), ("blk.0.ffn_down.weight", [ffn, hidden]),
              ("output_norm.weight", [hidden])]
    if not tied:
        shapes.append(("output.weight", [hidden, vocab]))
    out = []
    for i, (name, dims) in enumerate(shapes):
        t = "F32" if len(dims) == 1 else tname
        n = 1
        for d in dims:
            n *= d
        out.append((name, dims, t, tensor_bytes(t, n, i)))
    return out


def gguf_seeds():
    seeds = {}
    every = [("u8", U8, 200), ("i8", I8, -5), ("u16", U16, 65000), ("i16", I16, -300),
             ("u32", U32, 4000000000), ("i32", I32, -7), ("f32", F32, 1.5), ("bool", BOOL, 1),
             ("str", STRING, "héllo"), ("u64", U64, 1 << 40), ("i64", I64, -(1 << 40)),
             ("f64", F64, 0.1), ("ints", ARRAY, (I16, [1, -1, 3])),
             ("floats", ARRAY, (F64, [0.5, -2.0])), ("strs", ARRAY, (STRING, ["a", ""])),
             ("nested", ARRAY, (ARRAY, [(U8, [1, 2]), (STRING, ["x"])]))]
    seeds["metadata_v3.gguf"] = gguf(every, [])
    seeds["metadata_v2.gguf"] = gguf(every, [], version=2)
    seeds["alignment64.gguf"] = gguf([("general.alignment", U32, 64)],
                                     [("a", [3], "F32", tensor_bytes("F32", 3, 1)),
                                      ("b", [2, 2], "F32", tensor_bytes("F32", 4, 2))], alignment=64)
    for tname, (_, be, _) in GGML.items():
        n = max(be, 32) * 2
        seeds[f"tensor_{tname}.gguf"] = gguf([], [("w", [n // 2, 2], tname, tensor_bytes(tname, n, 3))])
    seeds["llama_f32.gguf"] = gguf(llama_kvs(), llama_tensors())
    seeds["llama_q8_0_untied.gguf"] = gguf(llama_kvs(hidden=32, heads=4, kv_heads=2),
                                           llama_tensors("Q8_0", hidden=32, kv=16, tied=False))
    seeds["llama_yarn.gguf"] = gguf(llama_kvs() + [("llama.rope.scaling.type", STRING, "yarn"),
                                                   ("llama.rope.scaling.factor", F32, 4.0),
                                                   ("llama.rope.scaling.original_context_length", U32, 64)],
                                    llama_tensors())
    seeds["truncated.gguf"] = seeds["llama_f32.gguf"][:300]
    return seeds


def safetensors(header: dict, data: bytes, pad=True):
    text = json.dumps(header, separators=(",", ":"))
    if pad:
        text += " " * (-(len(text) + 8) % 8)
    return struct.pack("<Q", len(text)) + text.encode() + data


def safetensors_seeds():
    seeds = {}
    with open(os.path.join(FIXTURES, "safetensors_files.json")) as f:
        fixture = json.load(f)
    for name, b64 in fixture["files"].items():
        seeds[name] = base64.b64decode(b64)
    for name, b64 in fixture["tiny_llama"]["files"].items():
        if name.endswith(".safetensors"):
            seeds["tiny_llama_" + name] = base64.b64decode(b64)
    seeds["empty.safetensors"] = safetensors({}, b"")
    seeds["metadata_only.safetensors"] = safetensors({"__metadata__": {"format": "pt"}}, b"")
    seeds["f4.safetensors"] = safetensors({"x": {"dtype": "F4", "shape": [4], "data_offsets": [0, 2]}},
                                          b"\x12\x34")
    seeds["unpadded.safetensors"] = safetensors(
        {"t": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}}, b"\0" * 8, pad=False)
    return seeds


def index_seeds():
    with open(os.path.join(FIXTURES, "safetensors_files.json")) as f:
        fixture = json.load(f)
    seeds = {"real.index.json": base64.b64decode(
        fixture["tiny_llama"]["files"]["model.safetensors.index.json"])}
    seeds["sub.index.json"] = json.dumps(
        {"metadata": {"total_size": 8}, "weight_map": {"a": "s1.safetensors", "b": "sub/s2.safetensors"}}).encode()
    seeds["dots.index.json"] = json.dumps({"weight_map": {"a": "../x.safetensors"}}).encode()
    return seeds


def config_seeds():
    with open(os.path.join(FIXTURES, "hf_configs.json")) as f:
        fixture = json.load(f)
    seeds = {}
    for name, entry in fixture.items():
        data = entry["config"].encode()
        if entry["generation_config"] is not None:
            data += b"\0" + entry["generation_config"].encode()
        seeds[name + ".json"] = data
    with open(os.path.join(FIXTURES, "safetensors_files.json")) as f:
        tiny = json.load(f)["tiny_llama"]["files"]
    seeds["transformers5.json"] = (base64.b64decode(tiny["config.json"]) + b"\0" +
                                   base64.b64decode(tiny["generation_config.json"]))
    return seeds


# fuzz_lora_adapter's model: 2 layers, hidden 16, 4 heads of 4, 2 kv heads, MLP 32.
LORA_SHAPES = {"q_proj": (16, 16), "k_proj": (8, 16), "v_proj": (8, 16), "o_proj": (16, 16),
               "gate_proj": (32, 16), "up_proj": (32, 16), "down_proj": (16, 32)}
LORA_GGUF = {"q_proj": "attn_q", "k_proj": "attn_k", "v_proj": "attn_v", "o_proj": "attn_output",
             "gate_proj": "ffn_gate", "up_proj": "ffn_up", "down_proj": "ffn_down"}
LORA_SELF_ATTN = ("q_proj", "k_proj", "v_proj", "o_proj")


def lora_floats(n, seed, dtype):
    values = [((seed * 37 + i * 11) % 23 - 11) / 64.0 for i in range(n)]
    return b"".join(struct.pack("<e" if dtype == "F16" else "<f", v) for v in values)


def peft_seed(targets, rank, config_extra=None, dtype="F32", layers=(0, 1)):
    """A PEFT adapter as fuzz_lora_adapter reads it: 1, the config's length, config, safetensors."""
    config = {"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank, "target_modules": list(targets),
              "bias": "none"}
    config.update(config_extra or {})
    header, data = {}, b""
    for layer in layers:
        for t in targets:
            out, inp = LORA_SHAPES[t]
            block = "self_attn" if t in LORA_SELF_ATTN else "mlp"
            base = f"base_model.model.model.layers.{layer}.{block}.{t}"
            for which, shape in (("lora_A", [rank, inp]), ("lora_B", [out, rank])):
                raw = lora_floats(shape[0] * shape[1], len(header), dtype)
                header[f"{base}.{which}.weight"] = {"dtype": dtype, "shape": shape,
                                                    "data_offsets": [len(data), len(data) + len(raw)]}
                data += raw
    text = json.dumps(config).encode()
    return b"\x01" + struct.pack("<H", len(text)) + text + safetensors(header, data)


def gguf_lora_seed(targets, rank, alpha=None):
    """A llama.cpp GGUF adapter as fuzz_lora_adapter reads it: 0, then the file."""
    kvs = [("general.architecture", STRING, "llama"), ("general.type", STRING, "adapter"),
           ("adapter.type", STRING, "lora")]
    if alpha is not None:
        kvs.append(("adapter.lora.alpha", F32, alpha))
    tensors = []
    for layer in (0, 1):
        for t in targets:
            out, inp = LORA_SHAPES[t]
            base = f"blk.{layer}.{LORA_GGUF[t]}.weight"
            # ggml dimensions run innermost first: A [rank, in] is (in, rank).
            tensors.append((base + ".lora_a", [inp, rank], "F32", lora_floats(inp * rank, layer, "F32")))
            tensors.append((base + ".lora_b", [rank, out], "F32", lora_floats(rank * out, layer + 1, "F32")))
    return b"\x00" + gguf(kvs, tensors)


def lora_seeds():
    seeds = {
        "peft_qv_r2.bin": peft_seed(["q_proj", "v_proj"], 2),
        "peft_all_r4_rslora.bin": peft_seed(list(LORA_SHAPES), 4, {"use_rslora": True}),
        "peft_f16_patterns.bin": peft_seed(["q_proj", "down_proj"], 2,
                                           {"rank_pattern": {}, "alpha_pattern": {"down_proj": 8}},
                                           dtype="F16"),
        "peft_one_layer.bin": peft_seed(["gate_proj", "up_proj"], 1, layers=(1,)),
        "gguf_qk_r2.bin": gguf_lora_seed(["q_proj", "k_proj"], 2, alpha=4.0),
        "gguf_all_r2_no_alpha.bin": gguf_lora_seed(list(LORA_SHAPES), 2),
    }
    seeds["peft_truncated.bin"] = seeds["peft_qv_r2.bin"][:200]
    return seeds


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    for target, seeds in [("fuzz_gguf", gguf_seeds()), ("fuzz_safetensors", safetensors_seeds()),
                          ("fuzz_safetensors_index", index_seeds()),
                          ("fuzz_hf_config", config_seeds()),
                          ("fuzz_lora_adapter", lora_seeds())]:
        folder = os.path.join(out, target)
        os.makedirs(folder, exist_ok=True)
        for name, data in seeds.items():
            with open(os.path.join(folder, name), "wb") as f:
                f.write(data)
        print(f"{target}: {len(seeds)} seeds in {folder}")


if __name__ == "__main__":
    main()
