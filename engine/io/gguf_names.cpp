#include "engine/io/gguf_names.h"

#include <cstring>
#include <vector>

#include "engine/core/error.h"

namespace hearth {

namespace {

struct NamePair {
  const char* gguf;
  const char* hf;
};

// Per-layer names (after "blk.N.") and their Hugging Face names (after "model.layers.N.").
constexpr NamePair kLayerNames[] = {
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.o_proj"},
    {"ffn_gate", "mlp.gate_proj"},
    {"ffn_up", "mlp.up_proj"},
    {"ffn_down", "mlp.down_proj"},
    {"attn_norm", "input_layernorm"},
    {"ffn_norm", "post_attention_layernorm"},
};

constexpr NamePair kGlobalNames[] = {
    {"token_embd", "model.embed_tokens"},
    {"output_norm", "model.norm"},
    {"output", "lm_head"},
};

bool split_suffix(std::string_view name, std::string_view* base, std::string_view* suffix) {
  for (std::string_view s : {".weight", ".bias"}) {
    if (name.size() > s.size() && name.substr(name.size() - s.size()) == s) {
      *base = name.substr(0, name.size() - s.size());
      *suffix = s;
      return true;
    }
  }
  return false;
}

// "blk.12.attn_q" -> layer "12", rest "attn_q".
bool split_layer(std::string_view base, std::string_view* layer, std::string_view* rest) {
  if (base.substr(0, 4) != "blk.") return false;
  const size_t dot = base.find('.', 4);
  if (dot == std::string_view::npos || dot == 4) return false;
  *layer = base.substr(4, dot - 4);
  for (char ch : *layer) {
    if (ch < '0' || ch > '9') return false;
  }
  *rest = base.substr(dot + 1);
  return true;
}

}  // namespace

std::optional<std::string> gguf_to_hf_name(std::string_view gguf_name) {
  std::string_view base, suffix;
  if (!split_suffix(gguf_name, &base, &suffix)) return std::nullopt;
  for (const auto& p : kGlobalNames) {
    if (base == p.gguf) return std::string(p.hf) + std::string(suffix);
  }
  std::string_view layer, rest;
  if (!split_layer(base, &layer, &rest)) return std::nullopt;
  for (const auto& p : kLayerNames) {
    if (rest == p.gguf) {
      return "model.layers." + std::string(layer) + "." + p.hf + std::string(suffix);
    }
  }
  return std::nullopt;
}

RopePermutation rope_permutation_of(std::string_view gguf_name) {
  std::string_view base, suffix, layer, rest;
  if (!split_suffix(gguf_name, &base, &suffix) || !split_layer(base, &layer, &rest)) {
    return RopePermutation::kNone;
  }
  if (rest == "attn_q") return RopePermutation::kQuery;
  if (rest == "attn_k") return RopePermutation::kKey;
  return RopePermutation::kNone;
}

HostTensor unpermute_rope_rows(const HostTensor& t, int64_t n_heads, const std::string& what) {
  if (t.dtype != DType::kF32 || t.shape.empty() || t.shape.size() > 2) {
    fail(ErrorCode::kInvalidFile, what + ": expected a 1-D or 2-D F32 tensor to un-permute, got " +
                                      std::string(dtype_name(t.dtype)) + " " + t.shape_string());
  }
  const int64_t rows = t.shape[0];
  const int64_t cols = t.shape.size() == 2 ? t.shape[1] : 1;
  if (n_heads <= 0 || rows % n_heads != 0 || (rows / n_heads) % 2 != 0) {
    fail(ErrorCode::kInvalidFile, what + ": " + std::to_string(rows) + " rows do not split into " +
                                      std::to_string(n_heads) + " heads of even size");
  }
  const int64_t head_dim = rows / n_heads;
  const int64_t half = head_dim / 2;
  HostTensor out = HostTensor::allocate(DType::kF32, t.shape);
  const float* src = t.as<float>();
  float* dst = static_cast<float*>(out.mutable_data());
  const size_t row_bytes = static_cast<size_t>(cols) * sizeof(float);
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < half; ++i) {
      for (int64_t s = 0; s < 2; ++s) {
        const int64_t hf_row = h * head_dim + s * half + i;
        const int64_t gguf_row = h * head_dim + 2 * i + s;
        std::memcpy(dst + hf_row * cols, src + gguf_row * cols, row_bytes);
      }
    }
  }
  return out;
}

}  // namespace hearth
