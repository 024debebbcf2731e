#include "engine/io/gguf_config.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/core/error.h"

namespace hearth {

namespace {

constexpr double kPi = 3.14159265358979323846;

class Keys {
 public:
  Keys(const GgufFile& g, std::string prefix) : g_(g), prefix_(std::move(prefix)) {}

  [[noreturn]] void error(const std::string& key, const std::string& why) const {
    fail(ErrorCode::kInvalidFile, g_.display_name() + ": metadata " + key + " " + why);
  }
  std::string key(const std::string& suffix) const { return prefix_ + suffix; }
  std::optional<int64_t> integer(const std::string& suffix) const {
    return g_.get_int(key(suffix));
  }
  int64_t required_integer(const std::string& suffix) const {
    auto v = integer(suffix);
    if (!v) error(key(suffix), "is missing");
    return *v;
  }
  // Floats written as integers by some converters are accepted too.
  std::optional<double> number(const std::string& suffix) const {
    const std::string k = key(suffix);
    const auto t = g_.type(k);
    if (!t) return std::nullopt;
    if (*t == GgufValueType::kF32 || *t == GgufValueType::kF64) return g_.get_float(k);
    return static_cast<double>(*g_.get_int(k));
  }

 private:
  const GgufFile& g_;
  std::string prefix_;
};

std::optional<int32_t> token_id(const GgufFile& g, const std::string& key) {
  const auto v = g.get_int(key);
  if (!v) return std::nullopt;
  if (*v < 0 || *v > std::numeric_limits<int32_t>::max()) {
    fail(ErrorCode::kInvalidFile, g.display_name() + ": metadata " + key + " = " +
                                      std::to_string(*v) + " is not a valid token id");
  }
  return static_cast<int32_t>(*v);
}

// Llama 3.1+ GGUFs carry no rope scaling keys; the converter bakes the llama3 frequency factors
// into a "rope_freqs.weight" tensor instead. The converter always uses low_freq_factor 1,
// high_freq_factor 4 and an original context of 8192, and the largest factor is the scaling
// factor itself; recomputing the factors from these values must reproduce the tensor.
RopeScaling llama3_from_rope_freqs(const GgufFile& g, const GgufTensorInfo& t, double theta,
                                   int64_t rotary_dim) {
  auto unsupported = [&](const std::string& why) {
    fail(ErrorCode::kUnsupported, g.display_name() + ": tensor rope_freqs.weight " + why);
  };
  if (t.dims.size() != 1 || t.dims[0] != rotary_dim / 2) {  // checked before reading any data
    unsupported("has shape " + std::to_string(t.dims[0]) + (t.dims.size() > 1 ? "x..." : "") +
                "; expected rotary_dim / 2 = " + std::to_string(rotary_dim / 2) + " factors");
  }
  const HostTensor freqs = g.dequantize(t);
  const int64_t n = freqs.numel();
  const float* f = freqs.as<float>();
  RopeScaling rs;
  rs.type = RopeScalingType::kLlama3;
  rs.low_freq_factor = 1.0;
  rs.high_freq_factor = 4.0;
  rs.original_max_position_embeddings = 8192;
  rs.factor = *std::max_element(f, f + n);
  if (!(rs.factor >= 1.0 && rs.factor <= 1024.0)) unsupported("holds an absurd factor");
  const double low_wavelen = 8192.0 / rs.low_freq_factor;
  const double high_wavelen = 8192.0 / rs.high_freq_factor;
  for (int64_t i = 0; i < n; ++i) {
    const double freq =
        1.0 / std::pow(theta, static_cast<double>(2 * i) / static_cast<double>(rotary_dim));
    const double wavelen = 2 * kPi / freq;
    double expected;
    if (wavelen < high_wavelen) {
      expected = 1.0;
    } else if (wavelen > low_wavelen) {
      expected = rs.factor;
    } else {
      const double smooth =
          (8192.0 / wavelen - rs.low_freq_factor) / (rs.high_freq_factor - rs.low_freq_factor);
      expected = 1.0 / ((1 - smooth) / rs.factor + smooth);
    }
    if (std::fabs(f[i] - expected) > 1e-3 * expected) {
      unsupported("does not match llama3 rope scaling (factor " + std::to_string(rs.factor) +
                  ", low 1, high 4, original context 8192) at index " + std::to_string(i));
    }
  }
  return rs;
}

}  // namespace

ModelConfig config_from_gguf(const GgufFile& g) {
  const auto arch = g.get_string("general.architecture");
  if (!arch) {
    fail(ErrorCode::kInvalidFile, g.display_name() + ": metadata general.architecture is missing");
  }
  if (*arch != "llama") {
    fail(ErrorCode::kUnsupported, g.display_name() + ": architecture \"" + *arch +
                                      "\" is not supported (Hearth runs GGUF models of the "
                                      "\"llama\" architecture)");
  }
  const Keys k(g, "llama.");
  if (auto experts = k.integer("expert_count"); experts && *experts > 0) {
    fail(ErrorCode::kUnsupported, g.display_name() + ": mixture-of-experts models (" +
                                      std::to_string(*experts) + " experts) are not supported");
  }

  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.name = g.get_string("general.name").value_or("");
  c.num_layers = k.required_integer("block_count");
  c.hidden_size = k.required_integer("embedding_length");
  c.intermediate_size = k.required_integer("feed_forward_length");
  c.num_heads = k.required_integer("attention.head_count");
  if (c.num_heads <= 0) k.error(k.key("attention.head_count"), "must be positive");
  if (g.type(k.key("attention.head_count_kv")) == GgufValueType::kArray) {
    fail(ErrorCode::kUnsupported,
         g.display_name() + ": per-layer attention.head_count_kv is not supported");
  }
  c.num_kv_heads = k.integer("attention.head_count_kv").value_or(c.num_heads);
  if (auto kl = k.integer("attention.key_length")) {
    c.head_dim = *kl;
  } else {
    if (c.hidden_size % c.num_heads != 0) {
      k.error(k.key("embedding_length"), "is not divisible by the head count");
    }
    c.head_dim = c.hidden_size / c.num_heads;
  }
  if (auto vl = k.integer("attention.value_length"); vl && *vl != c.head_dim) {
    fail(ErrorCode::kUnsupported, g.display_name() + ": value_length " + std::to_string(*vl) +
                                      " differs from key_length " + std::to_string(c.head_dim));
  }
  if (auto ctx = k.integer("context_length")) c.max_position_embeddings = *ctx;
  const auto eps = k.number("attention.layer_norm_rms_epsilon");
  if (!eps) k.error(k.key("attention.layer_norm_rms_epsilon"), "is missing");
  c.rms_norm_eps = *eps;
  c.rope_theta = k.number("rope.freq_base").value_or(10000.0);
  if (auto rot = k.integer("rope.dimension_count")) {
    if (*rot <= 0 || *rot > c.head_dim) {
      k.error(k.key("rope.dimension_count"), "= " + std::to_string(*rot) +
                                                 " must be in 1..head_dim (" +
                                                 std::to_string(c.head_dim) + ")");
    }
    c.partial_rotary_factor = static_cast<double>(*rot) / static_cast<double>(c.head_dim);
  }

  if (auto v = k.integer("vocab_size")) {
    c.vocab_size = *v;
  } else if (auto n = g.array_length("tokenizer.ggml.tokens")) {
    c.vocab_size = static_cast<int64_t>(std::min<uint64_t>(*n, INT64_MAX));
  } else if (const auto* emb = g.find_tensor("token_embd.weight"); emb && emb->dims.size() == 2) {
    c.vocab_size = emb->dims[1];
  } else {
    k.error(k.key("vocab_size"), "is missing and there is no token list");
  }

  // RoPE scaling: explicit keys first, then the llama3 factors tensor.
  const std::string scaling = g.get_string(k.key("rope.scaling.type")).value_or("");
  if (scaling == "linear" || scaling == "yarn") {
    c.rope_scaling.type = scaling == "linear" ? RopeScalingType::kLinear : RopeScalingType::kYarn;
    const auto factor = k.number("rope.scaling.factor");
    if (!factor) k.error(k.key("rope.scaling.factor"), "is missing");
    c.rope_scaling.factor = *factor;
    c.rope_scaling.original_max_position_embeddings =
        k.integer("rope.scaling.original_context_length").value_or(0);
  } else if (!scaling.empty() && scaling != "none") {
    fail(ErrorCode::kUnsupported,
         g.display_name() + ": rope scaling type \"" + scaling + "\" is not supported");
  } else if (auto linear = k.number("rope.scale_linear"); linear && *linear != 1.0) {
    c.rope_scaling.type = RopeScalingType::kLinear;  // the key older converters wrote
    c.rope_scaling.factor = *linear;
  }
  if (const auto* rf = g.find_tensor("rope_freqs.weight")) {
    if (c.rope_scaling.type != RopeScalingType::kNone) {
      fail(ErrorCode::kUnsupported,
           g.display_name() + ": both rope scaling keys and a rope_freqs tensor");
    }
    c.rope_scaling = llama3_from_rope_freqs(g, *rf, c.rope_theta, c.rotary_dim());
  }

  c.tie_word_embeddings = g.find_tensor("output.weight") == nullptr;
  c.attention_bias = g.find_tensor("blk.0.attn_q.bias") != nullptr;
  c.mlp_bias = g.find_tensor("blk.0.ffn_up.bias") != nullptr;

  c.bos_token_id = token_id(g, "tokenizer.ggml.bos_token_id");
  for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    if (auto id = token_id(g, key)) {
      if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), *id) == c.eos_token_ids.end()) {
        c.eos_token_ids.push_back(*id);
      }
    }
  }
  if (g.has("tokenizer.ggml.eos_token_ids")) {
    // Held in a variable: ranging over *optional-temporary would read a destroyed vector.
    const auto eos_ids = g.get_int_array("tokenizer.ggml.eos_token_ids");
    if (!eos_ids) {
      fail(ErrorCode::kInvalidFile,
           g.display_name() + ": tokenizer.ggml.eos_token_ids is not an array of integers");
    }
    for (int64_t id : *eos_ids) {
      if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
        fail(ErrorCode::kInvalidFile, g.display_name() +
                                          ": tokenizer.ggml.eos_token_ids holds invalid id " +
                                          std::to_string(id));
      }
      const auto id32 = static_cast<int32_t>(id);
      if (std::find(c.eos_token_ids.begin(), c.eos_token_ids.end(), id32) ==
          c.eos_token_ids.end()) {
        c.eos_token_ids.push_back(id32);
      }
    }
  }
  c.pad_token_id = token_id(g, "tokenizer.ggml.padding_token_id");

  try {
    c.validate();
  } catch (const Error& e) {
    fail(e.code(), g.display_name() + ": " + e.what());
  }
  return c;
}

}  // namespace hearth
