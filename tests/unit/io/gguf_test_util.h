// Builds valid GGUF images in memory (and, by editing fields afterwards, malformed ones).
#pragma once

#include <cmath>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "engine/core/dtype.h"
#include "engine/io/gguf_dequant.h"
#include "engine/io/gguf_file.h"
#include "tests/unit/io/io_test_util.h"

namespace hearth::test {

enum GgufType : uint32_t {
  kGU8 = 0,
  kGI8 = 1,
  kGU16 = 2,
  kGI16 = 3,
  kGU32 = 4,
  kGI32 = 5,
  kGF32 = 6,
  kGBool = 7,
  kGString = 8,
  kGArray = 9,
  kGU64 = 10,
  kGI64 = 11,
  kGF64 = 12,
};

struct GgufBuilder {
  struct Kv {
    std::string key;
    uint32_t type;
    Bytes value;  // encoded value (for arrays: element type, count, elements)
  };
  struct Tensor {
    std::string name;
    std::vector<uint64_t> dims;
    uint32_t type;
    Bytes data;
  };

  uint32_t version = 3;
  uint64_t alignment = 32;  // layout alignment; add general.alignment yourself to change it
  std::vector<Kv> kvs;
  std::vector<Tensor> tensors;

  GgufBuilder& kv(std::string key, uint32_t type, Bytes value) {
    kvs.push_back({std::move(key), type, std::move(value)});
    return *this;
  }
  GgufBuilder& u32(std::string key, uint32_t v) {
    return kv(std::move(key), kGU32, ByteWriter().u32(v).take());
  }
  GgufBuilder& f32(std::string key, float v) {
    return kv(std::move(key), kGF32, ByteWriter().f32(v).take());
  }
  GgufBuilder& string(std::string key, std::string_view v) {
    return kv(std::move(key), kGString, ByteWriter().str(v).take());
  }
  GgufBuilder& string_array(std::string key, const std::vector<std::string>& items) {
    ByteWriter w;
    w.u32(kGString).u64(items.size());
    for (const auto& s : items) w.str(s);
    return kv(std::move(key), kGArray, w.take());
  }
  GgufBuilder& tensor(std::string name, std::vector<uint64_t> dims, uint32_t type, Bytes data) {
    tensors.push_back({std::move(name), std::move(dims), type, std::move(data)});
    return *this;
  }
  GgufBuilder& f32_tensor(std::string name, std::vector<uint64_t> dims,
                          const std::vector<float>& values) {
    ByteWriter w;
    for (float v : values) w.f32(v);
    return tensor(std::move(name), std::move(dims), 0, w.take());
  }

  Bytes build() const {
    ByteWriter w;
    w.text("GGUF").u32(version).u64(tensors.size()).u64(kvs.size());
    for (const auto& k : kvs) w.str(k.key).u32(k.type).bytes(k.value);
    uint64_t offset = 0;
    std::vector<uint64_t> offsets;
    for (const auto& t : tensors) {
      w.str(t.name).u32(static_cast<uint32_t>(t.dims.size()));
      for (uint64_t d : t.dims) w.u64(d);
      w.u32(t.type).u64(offset);
      offsets.push_back(offset);
      offset += (t.data.size() + alignment - 1) / alignment * alignment;
    }
    w.pad_to(alignment);
    for (const auto& t : tensors) w.bytes(t.data).pad_to(alignment);
    return w.take();
  }
};

// A GGUF image holding one [N, K] tensor of random blocks of `type`: random code and scale bytes,
// and fp16 fields (d, and the K-quants' dmin) finite, of either sign. Q4_1/Q5_1 minimums lie
// near −8·|d| as real ones do, or with `tiny_minimums` some 2^12 times smaller than d.
inline Bytes random_block_tensor(GgmlType type, int64_t K, int64_t N, uint32_t seed,
                                 bool tiny_minimums = false) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  std::vector<uint32_t> half_fields = {0};  // byte offsets of the block's fp16 fields
  if (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1 || type == GgmlType::kQ4_K ||
      type == GgmlType::kQ5_K) {
    half_fields = {0, 2};
  } else if (type == GgmlType::kQ6_K) {
    half_fields = {208};
  } else if (type == GgmlType::kQ2_K) {
    half_fields = {80, 82};
  } else if (type == GgmlType::kQ3_K) {
    half_fields = {108};
  }
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> scale(0.001f, 0.1f);
  std::vector<uint8_t> block(traits->block_bytes);
  ByteWriter data;
  for (int64_t b = 0; b < N * K / traits->block_elements; ++b) {
    for (auto& byte : block) byte = static_cast<uint8_t>(rng());
    const float d = rng() % 2 ? scale(rng) : -scale(rng);
    for (uint32_t at : half_fields) {
      float v = at == half_fields[0] ? d : rng() % 2 ? scale(rng) : -scale(rng);
      if (at == 2 && (type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1)) {
        v = tiny_minimums ? v / 4096.0f
                          : -std::abs(d) * (4.0f + 8.0f * (scale(rng) - 0.001f) / 0.099f);
      }
      const uint16_t h = float_to_half(v);
      block[at] = static_cast<uint8_t>(h & 0xff);
      block[at + 1] = static_cast<uint8_t>(h >> 8);
    }
    for (uint8_t byte : block) data.u8(byte);
  }
  GgufBuilder g;
  g.tensor("w", {static_cast<uint64_t>(K), static_cast<uint64_t>(N)}, static_cast<uint32_t>(type),
           data.take());
  return g.build();
}

// A one-layer llama-architecture model with F32 tensors: hidden 16, 4 heads of 4, 2 kv heads,
// ffn 32, vocab 8. Tensor values are their flat index + 1000 * tensor number.
inline GgufBuilder tiny_llama_gguf(bool tied = true) {
  GgufBuilder b;
  b.string("general.architecture", "llama")
      .string("general.name", "Tiny Llama")
      .u32("llama.block_count", 1)
      .u32("llama.context_length", 256)
      .u32("llama.embedding_length", 16)
      .u32("llama.feed_forward_length", 32)
      .u32("llama.attention.head_count", 4)
      .u32("llama.attention.head_count_kv", 2)
      .f32("llama.rope.freq_base", 50000.0f)
      .f32("llama.attention.layer_norm_rms_epsilon", 1e-5f)
      .u32("llama.rope.dimension_count", 4)
      .string_array("tokenizer.ggml.tokens", {"a", "b", "c", "d", "e", "f", "g", "h"})
      .u32("tokenizer.ggml.bos_token_id", 1)
      .u32("tokenizer.ggml.eos_token_id", 2)
      .u32("tokenizer.ggml.eot_token_id", 7);
  int number = 0;
  auto add = [&](const std::string& name, std::vector<uint64_t> dims) {
    uint64_t n = 1;
    for (auto d : dims) n *= d;
    std::vector<float> v(n);
    for (uint64_t i = 0; i < n; ++i) v[i] = static_cast<float>(i + 1000 * number);
    ++number;
    b.f32_tensor(name, std::move(dims), v);
  };
  add("token_embd.weight", {16, 8});
  add("blk.0.attn_norm.weight", {16});
  add("blk.0.attn_q.weight", {16, 16});
  add("blk.0.attn_k.weight", {16, 8});
  add("blk.0.attn_v.weight", {16, 8});
  add("blk.0.attn_output.weight", {16, 16});
  add("blk.0.ffn_norm.weight", {16});
  add("blk.0.ffn_gate.weight", {16, 32});
  add("blk.0.ffn_up.weight", {16, 32});
  add("blk.0.ffn_down.weight", {32, 16});
  add("output_norm.weight", {16});
  if (!tied) add("output.weight", {16, 8});
  return b;
}

// A parsed GGUF image of one random [N, K] block tensor (its weights read the image's bytes).
struct RandomGguf {
  RandomGguf(GgmlType type, int64_t K, int64_t N, uint32_t seed, bool tiny_minimums = false)
      : image(random_block_tensor(type, K, N, seed, tiny_minimums)),
        file(std::make_shared<const GgufFile>(GgufFile::parse(std::span<const std::byte>(image)))) {
  }
  const GgufTensorInfo& tensor() const { return file->tensors().at(0); }
  Bytes image;
  std::shared_ptr<const GgufFile> file;
};

}  // namespace hearth::test
