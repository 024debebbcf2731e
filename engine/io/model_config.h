// Hyper-parameters of a Llama-family model, read from config.json (+ generation_config.json) or
// from GGUF metadata. One struct for both so that every later stage sees one shape.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hearth {

enum class RopeScalingType { kNone, kLinear, kDynamic, kYarn, kLlama3 };

const char* rope_scaling_name(RopeScalingType t);  // "none", "linear", "dynamic", "yarn", "llama3"

struct RopeScaling {
  RopeScalingType type = RopeScalingType::kNone;
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  // llama3 and yarn; 0 means "not given" (falls back to max_position_embeddings).
  int64_t original_max_position_embeddings = 0;
  // yarn
  double beta_fast = 32.0;
  double beta_slow = 1.0;
  std::optional<double> attention_factor;  // yarn: defaults to 0.1 * ln(factor) + 1
  std::optional<double> mscale;            // yarn (DeepSeek style), optional
  std::optional<double> mscale_all_dim;    // yarn (DeepSeek style), optional
};

struct ModelConfig {
  std::string architecture = "LlamaForCausalLM";  // or MistralForCausalLM
  std::string name;                               // display name, when the file gives one

  int64_t vocab_size = 0;
  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_layers = 0;
  int64_t num_heads = 0;
  int64_t num_kv_heads = 0;
  int64_t head_dim = 0;  // defaults to hidden_size / num_heads
  double rms_norm_eps = 1e-6;

  double rope_theta = 10000.0;
  double partial_rotary_factor = 1.0;
  RopeScaling rope_scaling;
  double ntk_alpha = 1.0;  // user override: base *= alpha^(d/(d-2)); 1 = off

  int64_t max_position_embeddings = 2048;  // what the model was trained for
  std::optional<int64_t> sliding_window;   // read, not applied (as for Llama/Mistral in HF)

  bool tie_word_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;

  std::optional<int32_t> bos_token_id;
  std::vector<int32_t> eos_token_ids;  // every id in this list ends generation
  std::optional<int32_t> pad_token_id;

  std::string torch_dtype;               // "float16", "bfloat16", "float32" or empty
  std::string quantization_config_json;  // raw `quantization_config` object, if any

  int64_t kv_dim() const { return num_kv_heads * head_dim; }
  int64_t q_dim() const { return num_heads * head_dim; }
  int64_t rotary_dim() const {
    return static_cast<int64_t>(static_cast<double>(head_dim) * partial_rotary_factor);
  }
  // Parameter count of the weights (embedding, layers, norm, head unless tied).
  int64_t parameter_count() const;

  // Throws Error(kInvalidFile) naming the field when a value is absent, absurd or inconsistent.
  void validate() const;
};

}  // namespace hearth
