#include "engine/bench/synthetic_source.h"

#include <cmath>
#include <cstring>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"

namespace hearth {
namespace {

ModelConfig llama(int64_t vocab, int64_t hidden, int64_t inter, int64_t layers, int64_t heads,
                  int64_t kv_heads, double theta, int64_t max_pos, const char* name) {
  ModelConfig c;
  c.name = name;
  c.vocab_size = vocab;
  c.hidden_size = hidden;
  c.intermediate_size = inter;
  c.num_layers = layers;
  c.num_heads = heads;
  c.num_kv_heads = kv_heads;
  c.head_dim = hidden / heads;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = theta;
  c.max_position_embeddings = max_pos;
  c.bos_token_id = 1;
  c.eos_token_ids = {2};
  c.torch_dtype = "float16";
  return c;
}

uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t name_hash(std::string_view name) {  // FNV-1a
  uint64_t h = 1469598103934665603ull;
  for (char c : name) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::vector<std::string> synthetic_model_names() {
  return {"llama2-7b", "llama3-8b", "llama2-13b", "llama2-70b", "smollm2-135m",
          "tiny",      "tiny-mha",  "tiny-gqa8",  "tiny-odd"};
}

ModelConfig synthetic_model_config(std::string_view name) {
  if (name == "llama2-7b") return llama(32000, 4096, 11008, 32, 32, 32, 1e4, 4096, "llama2-7b");
  if (name == "llama3-8b") {
    ModelConfig c = llama(128256, 4096, 14336, 32, 32, 8, 5e5, 8192, "llama3-8b");
    c.bos_token_id = 128000;
    c.eos_token_ids = {128001, 128009};
    return c;
  }
  if (name == "llama2-13b") return llama(32000, 5120, 13824, 40, 40, 40, 1e4, 4096, "llama2-13b");
  if (name == "llama2-70b") return llama(32000, 8192, 28672, 80, 64, 8, 1e4, 4096, "llama2-70b");
  if (name == "smollm2-135m") {
    ModelConfig c = llama(49152, 576, 1536, 30, 9, 3, 1e5, 8192, "smollm2-135m");
    c.tie_word_embeddings = true;
    return c;
  }
  if (name == "tiny") return llama(1000, 512, 1408, 4, 8, 2, 1e4, 4096, "tiny");
  if (name == "tiny-mha") return llama(1024, 512, 1024, 3, 4, 4, 1e4, 4096, "tiny-mha");
  if (name == "tiny-gqa8") return llama(999, 1024, 2048, 2, 16, 2, 1e4, 4096, "tiny-gqa8");
  if (name == "tiny-odd") {
    // Odd vocabulary and MLP width, 3 query heads per kv head (as SmolLM2).
    ModelConfig c = llama(1001, 576, 1000, 3, 9, 3, 1e4, 4096, "tiny-odd");
    return c;
  }
  std::string known;
  for (const auto& n : synthetic_model_names()) known += (known.empty() ? "" : ", ") + n;
  fail(ErrorCode::kInvalidArgument,
       "unknown synthetic model '" + std::string(name) + "' (known: " + known + ")");
}

SyntheticSource::SyntheticSource(const ModelConfig& config, uint64_t seed, DType dtype, int threads)
    : config_(config), seed_(seed), dtype_(dtype), pool_(std::make_unique<ThreadPool>(threads)) {
  if (dtype != DType::kF16 && dtype != DType::kBF16 && dtype != DType::kF32) {
    fail(ErrorCode::kInvalidArgument, "synthetic weights are F16, BF16 or F32");
  }
  config_.validate();
  const int64_t H = config_.hidden_size, I = config_.intermediate_size, V = config_.vocab_size;
  // Uniform values with variance 1/fan_in keep activations of order one through the layers.
  auto linear = [&](const std::string& name, int64_t out, int64_t in) {
    specs_[name] = Spec{{out, in}, 0.0f, static_cast<float>(std::sqrt(3.0 / in))};
  };
  auto norm = [&](const std::string& name) { specs_[name] = Spec{{H}, 1.0f, 0.1f}; };
  specs_["model.embed_tokens.weight"] = Spec{{V, H}, 0.0f, 1.0f};
  for (int64_t i = 0; i < config_.num_layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    norm(p + "input_layernorm.weight");
    norm(p + "post_attention_layernorm.weight");
    linear(p + "self_attn.q_proj.weight", config_.q_dim(), H);
    linear(p + "self_attn.k_proj.weight", config_.kv_dim(), H);
    linear(p + "self_attn.v_proj.weight", config_.kv_dim(), H);
    linear(p + "self_attn.o_proj.weight", H, config_.q_dim());
    linear(p + "mlp.gate_proj.weight", I, H);
    linear(p + "mlp.up_proj.weight", I, H);
    linear(p + "mlp.down_proj.weight", H, I);
  }
  norm("model.norm.weight");
  if (!config_.tie_word_embeddings) linear("lm_head.weight", V, H);
}

SyntheticSource::~SyntheticSource() = default;

std::vector<std::string> SyntheticSource::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, spec] : specs_) names.push_back(name);
  return names;
}

bool SyntheticSource::has(std::string_view name) const {
  return specs_.count(name) > 0;
}

TensorInfo SyntheticSource::info(std::string_view name) const {
  auto it = specs_.find(name);
  if (it == specs_.end()) {
    fail(ErrorCode::kInvalidFile, "synthetic model has no tensor " + std::string(name));
  }
  TensorInfo i;
  i.name = it->first;
  i.dtype = dtype_;
  i.shape = it->second.shape;
  i.stored_type = std::string(dtype_name(dtype_));
  i.file = "synthetic:" + config_.name;
  return i;
}

HostTensor SyntheticSource::get(std::string_view name) const {
  auto it = specs_.find(name);
  if (it == specs_.end()) {
    fail(ErrorCode::kInvalidFile, "synthetic model has no tensor " + std::string(name));
  }
  const Spec& spec = it->second;
  HostTensor t = HostTensor::allocate(dtype_, spec.shape);
  const int64_t n = t.numel();
  const uint64_t base = seed_ ^ name_hash(it->first);
  void* out = t.mutable_data();
  pool_->parallel_for(n, 1 << 16, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t z = splitmix64(base + (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ull);
      const float u = static_cast<float>(z >> 40) * (1.0f / 16777216.0f);
      const float v = spec.center + (2.0f * u - 1.0f) * spec.scale;
      switch (dtype_) {
        case DType::kF16:
          static_cast<uint16_t*>(out)[i] = float_to_half(v);
          break;
        case DType::kBF16:
          static_cast<uint16_t*>(out)[i] = float_to_bf16(v);
          break;
        default:
          static_cast<float*>(out)[i] = v;
      }
    }
  });
  return t;
}

uint64_t SyntheticSource::file_bytes() const {
  uint64_t total = 0;
  for (const auto& [name, spec] : specs_) {
    uint64_t n = 1;
    for (int64_t d : spec.shape) n *= static_cast<uint64_t>(d);
    total += n * dtype_size(dtype_);
  }
  return total;
}

}  // namespace hearth
