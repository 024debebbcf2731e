// A tiny Llama model with random weights and a byte tokenizer, for tests of the generation
// machinery that need a real forward pass but not a real checkpoint.
#pragma once

#include <map>
#include <optional>
#include <random>
#include <string>

#include "engine/core/error.h"
#include "engine/io/model_config.h"
#include "engine/io/tensor_source.h"
#include "engine/tokenizer/tokenizer.h"

namespace hearth::test {

inline ModelConfig tiny_config() {
  ModelConfig c;
  c.vocab_size = 260;  // 256 bytes + 4 specials
  c.hidden_size = 64;
  c.intermediate_size = 96;
  c.num_layers = 2;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 16;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = 10000;
  c.max_position_embeddings = 512;
  c.tie_word_embeddings = true;
  c.eos_token_ids = {257};
  return c;
}

// Random F32 weights with the Hugging Face names of `config`.
class TinyWeights final : public TensorSource {
 public:
  explicit TinyWeights(const ModelConfig& c, uint32_t seed = 7) {
    std::mt19937 rng(seed);
    auto add = [&](const std::string& name, std::vector<int64_t> shape, float scale, float mean) {
      int64_t n = 1;
      for (auto d : shape) n *= d;
      std::normal_distribution<float> dist(mean, scale);
      std::vector<float> v(static_cast<size_t>(n));
      for (auto& x : v) x = dist(rng);
      tensors_[name] = HostTensor::from_floats(std::move(v), shape);
    };
    const int64_t H = c.hidden_size, I = c.intermediate_size;
    add("model.embed_tokens.weight", {c.vocab_size, H}, 1.0f, 0);
    for (int64_t i = 0; i < c.num_layers; ++i) {
      const std::string p = "model.layers." + std::to_string(i) + ".";
      add(p + "input_layernorm.weight", {H}, 0.1f, 1.0f);
      add(p + "post_attention_layernorm.weight", {H}, 0.1f, 1.0f);
      add(p + "self_attn.q_proj.weight", {c.q_dim(), H}, 0.2f, 0);
      add(p + "self_attn.k_proj.weight", {c.kv_dim(), H}, 0.2f, 0);
      add(p + "self_attn.v_proj.weight", {c.kv_dim(), H}, 0.2f, 0);
      add(p + "self_attn.o_proj.weight", {H, c.q_dim()}, 0.2f, 0);
      add(p + "mlp.gate_proj.weight", {I, H}, 0.2f, 0);
      add(p + "mlp.up_proj.weight", {I, H}, 0.2f, 0);
      add(p + "mlp.down_proj.weight", {H, I}, 0.2f, 0);
    }
    add("model.norm.weight", {H}, 0.1f, 1.0f);
  }
  std::vector<std::string> tensor_names() const override {
    std::vector<std::string> names;
    for (const auto& [n, t] : tensors_) names.push_back(n);
    return names;
  }
  bool has(std::string_view name) const override { return tensors_.count(std::string(name)) > 0; }
  TensorInfo info(std::string_view name) const override {
    const auto& t = tensors_.at(std::string(name));
    return TensorInfo{std::string(name), t.dtype, t.shape, "F32", "<memory>"};
  }
  HostTensor get(std::string_view name) const override {
    auto it = tensors_.find(std::string(name));
    if (it == tensors_.end()) fail(ErrorCode::kInvalidFile, "no tensor " + std::string(name));
    return it->second;
  }
  uint64_t file_bytes() const override { return 0; }

 private:
  std::map<std::string, HostTensor> tensors_;
};

// Ids 0..255 are bytes; 256..259 are specials ("<s>", "</s>", ...).
class ByteTokenizer final : public Tokenizer {
 public:
  std::vector<int32_t> encode(std::string_view text, bool) const override {
    return std::vector<int32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                                reinterpret_cast<const unsigned char*>(text.data()) + text.size());
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    std::string s;
    for (int32_t id : ids) {
      if (id < 256) {
        s += static_cast<char>(id);
      } else if (!skip_special) {
        s += piece(id);
      }
    }
    return s;
  }
  std::string piece(int32_t id) const override {
    if (id < 256) return std::string(1, static_cast<char>(id));
    return "<special" + std::to_string(id) + ">";
  }
  std::optional<int32_t> piece_to_id(std::string_view) const override { return std::nullopt; }
  int32_t vocab_size() const override { return 260; }
  bool is_special(int32_t id) const override { return id >= 256; }
  std::optional<int32_t> bos_id() const override { return 256; }
  std::optional<int32_t> eos_id() const override { return 257; }
  bool adds_bos() const override { return false; }
};

}  // namespace hearth::test
