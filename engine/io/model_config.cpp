#include "engine/io/model_config.h"

#include <cmath>

#include "engine/core/error.h"

namespace hearth {

const char* rope_scaling_name(RopeScalingType t) {
  switch (t) {
    case RopeScalingType::kNone:
      return "none";
    case RopeScalingType::kLinear:
      return "linear";
    case RopeScalingType::kDynamic:
      return "dynamic";
    case RopeScalingType::kYarn:
      return "yarn";
    case RopeScalingType::kLlama3:
      return "llama3";
  }
  return "none";
}

int64_t ModelConfig::parameter_count() const {
  const int64_t attn = hidden_size * q_dim() + 2 * hidden_size * kv_dim() + q_dim() * hidden_size;
  const int64_t mlp = 3 * hidden_size * intermediate_size;
  const int64_t norms = 2 * hidden_size;
  int64_t total = vocab_size * hidden_size + num_layers * (attn + mlp + norms) + hidden_size;
  if (!tie_word_embeddings) total += vocab_size * hidden_size;
  return total;
}

namespace {

void require(bool ok, const std::string& field, const std::string& why) {
  if (!ok) fail(ErrorCode::kInvalidFile, "model config: " + field + " " + why);
}

}  // namespace

void ModelConfig::validate() const {
  // Bounds are generous (the largest Llama-family models sit far inside them) but keep sizes
  // computed from them far from overflow and allocations from absurd requests.
  require(vocab_size > 0 && vocab_size <= (1 << 22), "vocab_size",
          "must be in 1..4194304, got " + std::to_string(vocab_size));
  require(hidden_size > 0 && hidden_size <= 65536, "hidden_size",
          "must be in 1..65536, got " + std::to_string(hidden_size));
  require(intermediate_size > 0 && intermediate_size <= 1 << 20, "intermediate_size",
          "must be in 1..1048576, got " + std::to_string(intermediate_size));
  require(num_layers > 0 && num_layers <= 512, "num_hidden_layers",
          "must be in 1..512, got " + std::to_string(num_layers));
  require(num_heads > 0 && num_heads <= 1024, "num_attention_heads",
          "must be in 1..1024, got " + std::to_string(num_heads));
  require(num_kv_heads > 0 && num_kv_heads <= num_heads, "num_key_value_heads",
          "must be in 1..num_attention_heads, got " + std::to_string(num_kv_heads));
  require(num_heads % num_kv_heads == 0, "num_key_value_heads",
          "must divide num_attention_heads (" + std::to_string(num_heads) + "), got " +
              std::to_string(num_kv_heads));
  require(head_dim > 0 && head_dim <= 1024 && head_dim % 2 == 0, "head_dim",
          "must be an even number in 2..1024, got " + std::to_string(head_dim));
  require(std::isfinite(rms_norm_eps) && rms_norm_eps > 0 && rms_norm_eps < 1, "rms_norm_eps",
          "must be in (0, 1)");
  require(std::isfinite(rope_theta) && rope_theta > 1, "rope_theta", "must be > 1");
  require(partial_rotary_factor > 0 && partial_rotary_factor <= 1, "partial_rotary_factor",
          "must be in (0, 1]");
  require(rotary_dim() % 2 == 0 && rotary_dim() > 0, "partial_rotary_factor",
          "must give an even, positive rotary dimension");
  require(max_position_embeddings > 0 && max_position_embeddings <= (1 << 24),
          "max_position_embeddings", "must be in 1..16777216");
  require(std::isfinite(ntk_alpha) && ntk_alpha >= 1 && ntk_alpha <= 1000, "ntk_alpha",
          "must be in [1, 1000]");
  if (rope_scaling.type != RopeScalingType::kNone) {
    require(std::isfinite(rope_scaling.factor) && rope_scaling.factor >= 1 &&
                rope_scaling.factor <= 1024,
            "rope_scaling.factor", "must be in [1, 1024]");
  }
  if (rope_scaling.type == RopeScalingType::kLlama3) {
    require(rope_scaling.high_freq_factor > rope_scaling.low_freq_factor, "rope_scaling",
            "high_freq_factor must exceed low_freq_factor");
    require(rope_scaling.low_freq_factor > 0, "rope_scaling.low_freq_factor", "must be > 0");
  }
  require(rope_scaling.original_max_position_embeddings >= 0 &&
              rope_scaling.original_max_position_embeddings <= (1 << 24),
          "rope_scaling.original_max_position_embeddings", "must be in 0..16777216");
  for (int32_t id : eos_token_ids) {
    require(id >= 0 && id < vocab_size, "eos_token_id",
            std::to_string(id) + " is outside the vocabulary");
  }
  if (bos_token_id) {
    require(*bos_token_id >= 0 && *bos_token_id < vocab_size, "bos_token_id",
            std::to_string(*bos_token_id) + " is outside the vocabulary");
  }
}

}  // namespace hearth
