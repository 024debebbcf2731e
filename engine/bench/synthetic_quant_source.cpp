#include "engine/bench/synthetic_quant_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <utility>

#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace hearth {
namespace {

using TensorMap = std::map<std::string, HostTensor, std::less<>>;

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

uint64_t hash_name(std::string_view s, uint64_t seed) {
  uint64_t h = 1469598103934665603ull ^ seed;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return mix64(h);
}

// Uniform in [0, 1) from (seed, index).
float uniform(uint64_t seed, uint64_t i) {
  return static_cast<float>(mix64(seed + 0x9e3779b97f4a7c15ull * (i + 1)) >> 40) *
         (1.0f / 16777216.0f);
}

// Runs fn(begin, end) over [0, n) on several threads (big tensors only).
template <class Fn>
void split_work(int64_t n, Fn&& fn) {
  const int threads =
      n < (int64_t(1) << 20)
          ? 1
          : static_cast<int>(std::clamp(std::thread::hardware_concurrency(), 1u, 32u));
  std::vector<std::thread> pool;
  const int64_t per = (n + threads - 1) / threads;
  for (int t = 1; t < threads; ++t) {
    const int64_t b = t * per, e = std::min(n, b + per);
    if (b < e) pool.emplace_back([&, b, e] { fn(b, e); });
  }
  fn(0, std::min(n, per));
  for (auto& th : pool) th.join();
}

HostTensor tensor(DType dtype, std::vector<int64_t> shape, bool fill) {
  if (fill) return HostTensor::allocate(dtype, std::move(shape));
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  return t;
}

void random_words(HostTensor& t, uint64_t seed) {
  auto* w = static_cast<uint32_t*>(t.mutable_data());
  split_work(t.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      w[i] = static_cast<uint32_t>(mix64(seed + uint64_t(i) * 0x9e3779b97f4a7c15ull) >> 16);
  });
}

void random_halves(HostTensor& t, uint64_t seed, float lo, float hi) {
  auto* h = static_cast<uint16_t*>(t.mutable_data());
  split_work(t.numel(), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      h[i] = float_to_half(lo + (hi - lo) * uniform(seed, uint64_t(i)));
  });
}

std::vector<int32_t> random_permutation(int64_t k, uint64_t seed) {
  std::vector<int32_t> p(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) p[static_cast<size_t>(i)] = static_cast<int32_t>(i);
  for (int64_t i = k - 1; i > 0; --i) {
    const int64_t j = static_cast<int64_t>(mix64(seed + uint64_t(i)) % uint64_t(i + 1));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

// exllamav2's AdaptiveGPTQ.configure: (bits, rows) per group.
std::vector<std::pair<int, int64_t>> exl2_groups(int64_t k, const Exl2Recipe& r) {
  std::vector<std::pair<int, int64_t>> groups;
  int64_t remaining = k, row = 0;
  for (const auto& [bits, prop] : r.parts) {
    const int64_t gs = r.group_size.at(bits);
    const auto g = static_cast<int64_t>(
        std::ceil(std::min(static_cast<double>(k) * prop, static_cast<double>(remaining)) /
                  static_cast<double>(gs)));
    remaining -= g * gs;
    for (int64_t i = 0; i < g && row < k; ++i) {
      const int64_t rows = std::min(gs, k - row);
      groups.emplace_back(bits, rows);
      row += rows;
    }
  }
  if (row < k) groups.emplace_back(r.parts.back().first, k - row);  // rounding leftovers
  return groups;
}

// `perm_seed` picks the act-order permutation: matrices that read one input share it.
void exl2_layer(TensorMap& out, const std::string& p, int64_t k, int64_t n, const Exl2Recipe& r,
                uint64_t seed, uint64_t perm_seed, bool bias, bool fill) {
  const int64_t n_pad = (n + 31) / 32 * 32;
  const auto groups = exl2_groups(k, r);
  const auto G = static_cast<int64_t>(groups.size());
  int64_t q_rows = 0;
  for (const auto& [bits, rows] : groups) q_rows += (rows * bits + 31) / 32;
  HostTensor q_weight = tensor(DType::kI32, {q_rows, n_pad}, fill);
  HostTensor q_scale = tensor(DType::kI32, {G, n_pad / 8}, fill);
  HostTensor q_scale_max = tensor(DType::kF16, {G}, fill);
  HostTensor q_groups = tensor(DType::kI16, {2 * G}, fill);
  HostTensor q_invperm = tensor(DType::kI32, {k}, fill);
  if (fill) {
    random_words(q_weight, seed ^ 1);
    random_words(q_scale, seed ^ 2);
    auto* qsm = static_cast<uint16_t*>(q_scale_max.mutable_data());
    auto* qg = static_cast<int16_t*>(q_groups.mutable_data());
    // Weights of magnitude ~ 1/sqrt(k) at most keep activations in range over many layers.
    const float top = 2.0f / std::sqrt(static_cast<float>(k));
    int64_t qrow = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int bits = groups[static_cast<size_t>(g)].first;
      qsm[g] = float_to_half(top / static_cast<float>(1 << (bits - 1)) *
                             (0.5f + 0.5f * uniform(seed ^ 3, uint64_t(g))));
      qg[2 * g] = static_cast<int16_t>(bits);
      qg[2 * g + 1] = static_cast<int16_t>(static_cast<uint16_t>(qrow));
      qrow += (groups[static_cast<size_t>(g)].second * bits + 31) / 32;
    }
    const std::vector<int32_t> perm = random_permutation(k, perm_seed ^ 4);
    auto* inv = static_cast<int32_t*>(q_invperm.mutable_data());
    for (int64_t s = 0; s < k; ++s) inv[perm[static_cast<size_t>(s)]] = static_cast<int32_t>(s);
  }
  out[p + ".q_weight"] = std::move(q_weight);
  out[p + ".q_scale"] = std::move(q_scale);
  out[p + ".q_scale_max"] = std::move(q_scale_max);
  out[p + ".q_groups"] = std::move(q_groups);
  out[p + ".q_invperm"] = std::move(q_invperm);
  if (bias) {
    HostTensor b = tensor(DType::kF16, {n_pad}, fill);
    if (fill) random_halves(b, seed ^ 5, -0.1f, 0.1f);
    out[p + ".bias"] = std::move(b);
  }
}

void gptq_layer(TensorMap& out, const std::string& p, int64_t k, int64_t n, const GptqRecipe& r,
                uint64_t seed, uint64_t perm_seed, bool fill) {
  const int b = r.bits;
  if ((k * b) % 32 != 0 || (n * b) % 32 != 0) {
    fail(
        ErrorCode::kInvalidArgument,
        p + ": a " + std::to_string(b) + "-bit GPTQ layer needs k·b and n·b to be multiples of 32");
  }
  const int64_t gs = r.group_size == -1 ? k : r.group_size;
  const int64_t G = (k + gs - 1) / gs;
  HostTensor qweight = tensor(DType::kI32, {k * b / 32, n}, fill);
  HostTensor qzeros = tensor(DType::kI32, {G, n * b / 32}, fill);
  HostTensor scales = tensor(DType::kF16, {G, n}, fill);
  HostTensor g_idx = tensor(DType::kI32, {k}, fill);
  if (fill) {
    random_words(qweight, seed ^ 11);
    const float top = 2.0f / std::sqrt(static_cast<float>(k));
    random_halves(scales, seed ^ 12, 0.5f * top / static_cast<float>(1 << (b - 1)),
                  top / static_cast<float>(1 << (b - 1)));
    auto* z = static_cast<uint32_t*>(qzeros.mutable_data());
    const int64_t words = n * b / 32;
    for (int64_t g = 0; g < G; ++g) {
      for (int64_t c = 0; c < n; ++c) {
        uint32_t zero = 1u << (b - 1);  // sym
        if (!r.sym)
          zero = 1u + static_cast<uint32_t>(uniform(seed ^ 13, uint64_t(g * n + c)) *
                                            float((1 << b) - 2));
        const uint32_t stored = r.v2 ? zero : zero - 1;
        const int64_t off = c * b;
        z[g * words + off / 32] |= stored << (off % 32);
        if (off % 32 + b > 32) z[g * words + off / 32 + 1] |= stored >> (32 - off % 32);
      }
    }
    auto* gi = static_cast<int32_t*>(g_idx.mutable_data());
    if (r.act_order) {
      const std::vector<int32_t> perm = random_permutation(k, perm_seed ^ 14);
      for (int64_t i = 0; i < k; ++i)
        gi[perm[static_cast<size_t>(i)]] = static_cast<int32_t>(i / gs);
    } else {
      for (int64_t i = 0; i < k; ++i) gi[i] = static_cast<int32_t>(i / gs);
    }
  }
  out[p + ".qweight"] = std::move(qweight);
  out[p + ".qzeros"] = std::move(qzeros);
  out[p + ".scales"] = std::move(scales);
  out[p + ".g_idx"] = std::move(g_idx);
}

}  // namespace

Exl2Recipe exl2_recipe_for_bpw(double bpw) {
  Exl2Recipe r;
  if (bpw <= 2.75) {
    // 2.5: 40 % 3-bit, 60 % 2-bit at group size 64 (≈ 2.47 bpw with scales).
    const double p3 = std::clamp(bpw - 2.1, 0.05, 0.95);
    r.parts = {{3, p3}, {2, 1.0 - p3}};
    r.group_size = {{3, 64}, {2, 64}};
  } else if (bpw < 3.5) {
    r.parts = {{4, 0.05}, {3, 0.95}};
    r.group_size = {{4, 128}, {3, 128}};
  } else if (bpw < 4.5) {
    r.parts = {{4, 1.0}};
    r.group_size = {{4, 128}};
  } else if (bpw < 5.5) {
    r.parts = {{5, 1.0}};
    r.group_size = {{5, 128}};
  } else if (bpw < 7.0) {
    r.parts = {{6, 1.0}};
    r.group_size = {{6, 128}};
  } else {
    r.parts = {{8, 1.0}};
    r.group_size = {{8, 128}};
  }
  return r;
}

Exl2Recipe exl2_head_recipe() {
  Exl2Recipe r;
  r.parts = {{8, 0.15}, {6, 0.85}};
  r.group_size = {{8, 128}, {6, 128}};
  return r;
}

void make_exl2_layer(TensorMap& out, const std::string& prefix, int64_t k, int64_t n,
                     const Exl2Recipe& recipe, uint64_t seed, bool bias) {
  exl2_layer(out, prefix, k, n, recipe, seed, seed, bias, true);
}

void make_gptq_layer(TensorMap& out, const std::string& prefix, int64_t k, int64_t n,
                     const GptqRecipe& recipe, uint64_t seed) {
  gptq_layer(out, prefix, k, n, recipe, seed, seed, true);
}

std::string gptq_config_json(const GptqRecipe& r) {
  nlohmann::json j = {{"quant_method", "gptq"},
                      {"bits", r.bits},
                      {"group_size", r.group_size},
                      {"desc_act", r.act_order},
                      {"sym", r.sym},
                      {"checkpoint_format", r.v2 ? "gptq_v2" : "gptq"}};
  return j.dump();
}

// ---- MemoryTensorSource ----

std::vector<std::string> MemoryTensorSource::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, t] : tensors_) names.push_back(name);
  return names;
}
bool MemoryTensorSource::has(std::string_view name) const {
  return tensors_.count(name) > 0;
}
TensorInfo MemoryTensorSource::info(std::string_view name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail(ErrorCode::kInvalidFile, "no tensor \"" + std::string(name) + "\"");
  TensorInfo i;
  i.name = it->first;
  i.dtype = it->second.dtype;
  i.shape = it->second.shape;
  i.stored_type = std::string(dtype_name(i.dtype));
  return i;
}
HostTensor MemoryTensorSource::get(std::string_view name) const {
  const auto it = tensors_.find(name);
  if (it == tensors_.end())
    fail(ErrorCode::kInvalidFile, "no tensor \"" + std::string(name) + "\"");
  return it->second;
}
uint64_t MemoryTensorSource::file_bytes() const {
  uint64_t b = 0;
  for (const auto& [name, t] : tensors_) b += t.nbytes();
  return b;
}

// ---- SyntheticQuantSource ----

SyntheticQuantSource::SyntheticQuantSource(const ModelConfig& config, const Options& options)
    : config_(config), options_(options) {
  if (options.format != "exl2" && options.format != "gptq") {
    fail(ErrorCode::kInvalidArgument,
         "synthetic quantized models are \"exl2\" or \"gptq\", not \"" + options.format + "\"");
  }
  config_.validate();
  const int64_t H = config_.hidden_size, I = config_.intermediate_size;
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    linears_[p + "self_attn.q_proj"] = {H, config_.q_dim()};
    linears_[p + "self_attn.k_proj"] = {H, config_.kv_dim()};
    linears_[p + "self_attn.v_proj"] = {H, config_.kv_dim()};
    linears_[p + "self_attn.o_proj"] = {config_.q_dim(), H};
    linears_[p + "mlp.gate_proj"] = {H, I};
    linears_[p + "mlp.up_proj"] = {H, I};
    linears_[p + "mlp.down_proj"] = {I, H};
  }
  linears_["lm_head"] = {H, config_.vocab_size, true};
  auto add_dense = [&](const std::string& name, std::vector<int64_t> shape) {
    Entry e;
    e.info.name = name;
    e.info.dtype = DType::kF16;
    e.info.shape = std::move(shape);
    e.info.stored_type = "F16";
    uint64_t count = 2;
    for (int64_t d : e.info.shape) count *= static_cast<uint64_t>(d);
    bytes_ += count;
    entries_[name] = std::move(e);
  };
  add_dense("model.embed_tokens.weight", {config_.vocab_size, H});
  add_dense("model.norm.weight", {H});
  for (int64_t l = 0; l < config_.num_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    add_dense(p + "input_layernorm.weight", {H});
    add_dense(p + "post_attention_layernorm.weight", {H});
  }
  for (const auto& [prefix, lin] : linears_) {
    TensorMap shapes;
    if (options_.format == "exl2") {
      exl2_layer(shapes, prefix, lin.k, lin.n,
                 lin.head ? exl2_head_recipe() : exl2_recipe_for_bpw(options_.bpw), 0, 0, false,
                 false);
    } else {
      gptq_layer(shapes, prefix, lin.k, lin.n, options_.gptq, 0, 0, false);
    }
    for (const auto& [name, t] : shapes) {
      Entry e;
      e.layer = prefix;
      e.info.name = name;
      e.info.dtype = t.dtype;
      e.info.shape = t.shape;
      e.info.stored_type = std::string(dtype_name(t.dtype));
      bytes_ += static_cast<uint64_t>(t.nbytes());
      entries_[name] = std::move(e);
    }
  }
  if (options_.format == "exl2") {
    config_json_ = nlohmann::json({{"quant_method", "exl2"},
                                   {"bits", options_.bpw},
                                   {"head_bits", 6},
                                   {"calibration", "synthetic (random codes)"}})
                       .dump();
  } else {
    config_json_ = gptq_config_json(options_.gptq);
  }
}

TensorMap SyntheticQuantSource::make_linear(const std::string& prefix) const {
  const Linear& lin = linears_.at(prefix);
  TensorMap out;
  const uint64_t seed = hash_name(prefix, options_.seed);
  // q, k and v (and gate and up) read one input, so a reference quantizer orders their rows by
  // the same Hessian (exllamav2 reuses q's for k and v, up reuses gate's): one permutation each.
  std::string input = prefix;
  for (const auto& [from, to] : {std::pair<std::string_view, std::string_view>{"k_proj", "q_proj"},
                                 {"v_proj", "q_proj"},
                                 {"up_proj", "gate_proj"}}) {
    if (const size_t at = input.find(from); at != std::string::npos)
      input.replace(at, from.size(), to);
  }
  const uint64_t perm_seed = hash_name(input, options_.seed);
  if (options_.format == "exl2") {
    exl2_layer(out, prefix, lin.k, lin.n,
               lin.head ? exl2_head_recipe() : exl2_recipe_for_bpw(options_.bpw), seed, perm_seed,
               false, true);
  } else {
    gptq_layer(out, prefix, lin.k, lin.n, options_.gptq, seed, perm_seed, true);
  }
  return out;
}

std::vector<std::string> SyntheticQuantSource::tensor_names() const {
  std::vector<std::string> names;
  for (const auto& [name, e] : entries_) names.push_back(name);
  return names;
}

bool SyntheticQuantSource::has(std::string_view name) const {
  return entries_.count(name) > 0;
}

TensorInfo SyntheticQuantSource::info(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end())
    fail(ErrorCode::kInvalidFile, "no tensor \"" + std::string(name) + "\"");
  return it->second.info;
}

HostTensor SyntheticQuantSource::get(std::string_view name) const {
  const auto it = entries_.find(name);
  if (it == entries_.end())
    fail(ErrorCode::kInvalidFile, "no tensor \"" + std::string(name) + "\"");
  const Entry& e = it->second;
  if (e.layer.empty()) {
    HostTensor t = HostTensor::allocate(DType::kF16, e.info.shape);
    const uint64_t seed = hash_name(name, options_.seed);
    if (name.ends_with("norm.weight")) {
      random_halves(t, seed, 0.9f, 1.1f);
    } else {
      random_halves(t, seed, -0.05f, 0.05f);
    }
    return t;
  }
  // The loader reads a layer's tensors one after the other: keep the last layer made.
  std::lock_guard<std::mutex> lock(mutex_);
  if (cached_prefix_ != e.layer) {
    cached_.clear();
    cached_ = make_linear(e.layer);
    cached_prefix_ = e.layer;
  }
  return cached_.at(std::string(name));
}

uint64_t SyntheticQuantSource::file_bytes() const {
  return bytes_;
}

}  // namespace hearth
