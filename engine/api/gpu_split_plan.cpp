#include "engine/api/gpu_split_plan.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include "engine/backend/tensor_parallel_split.h"
#include "engine/core/error.h"
#include "engine/formats/gptq_config.h"

namespace hearth {

const char* gpu_split_name(GpuSplit split) {
  return split == GpuSplit::kTensor ? "tensor" : "layer";
}

std::vector<int> load_gpus(const LoadOptions& options) {
  return options.gpus.empty() ? std::vector<int>{options.cuda_device} : options.gpus;
}

void check_gpu_options(const LoadOptions& options, int device_count) {
  const std::vector<int> gpus = load_gpus(options);
  std::set<int> seen;
  for (int g : gpus) {
    if (g < 0 || g >= device_count) {
      fail(ErrorCode::kInvalidArgument, "GPU " + std::to_string(g) + " does not exist (" +
                                            std::to_string(device_count) + " CUDA device" +
                                            (device_count == 1 ? "" : "s") + " found)");
    }
    if (!seen.insert(g).second) {
      fail(ErrorCode::kInvalidArgument, "GPU " + std::to_string(g) + " is named twice");
    }
  }
  if (gpus.size() > 1 && options.gpu_split == GpuSplit::kTensor) {
    if (options.speculation == Speculation::kDraft) {
      fail(ErrorCode::kUnsupported,
           "a draft model does not run with tensor parallelism yet: split the model by layers "
           "or speculate with n-grams");
    }
    if (!options.adapters.empty()) {
      fail(ErrorCode::kUnsupported,
           "LoRA adapters do not run with tensor parallelism yet: split the model by layers");
    }
  }
  if (!options.gpu_split_gib.empty()) {
    if (options.gpu_split_gib.size() != gpus.size()) {
      fail(ErrorCode::kInvalidArgument, "the GPU split gives " +
                                            std::to_string(options.gpu_split_gib.size()) +
                                            " sizes for " + std::to_string(gpus.size()) + " GPUs");
    }
    for (double gib : options.gpu_split_gib) {
      if (!std::isfinite(gib) || gib <= 0 || gib > 1 << 20) {
        fail(ErrorCode::kInvalidArgument, "every GPU split size must be a positive number of GiB");
      }
    }
  }
}

namespace {

// Consecutive layer counts per GPU: sequential fill up to each GPU's allotment (manual), or in
// proportion to each GPU's room (automatic), every GPU of the automatic split getting a layer.
std::vector<int64_t> assign_layers(const std::vector<size_t>& layer_cost,
                                   const std::vector<size_t>& fixed,
                                   const std::vector<size_t>& room, bool manual) {
  const size_t n = fixed.size();
  std::vector<int64_t> counts(n, 0);
  if (manual) {
    size_t g = 0, used = fixed[0];
    for (size_t cost : layer_cost) {
      while (g + 1 < n && counts[g] > 0 && used + cost > room[g]) used = fixed[++g];
      ++counts[g];
      used += cost;
    }
    return counts;
  }
  double total_room = 0, total_cost = 0;
  for (size_t r : room) total_room += static_cast<double>(r);
  for (size_t c : layer_cost) total_cost += static_cast<double>(c);
  if (total_room <= 0) total_room = 1;
  double before = 0;
  for (size_t c : layer_cost) {
    const double middle = (before + static_cast<double>(c) / 2) / std::max(total_cost, 1.0);
    double cum = 0;
    size_t g = 0;
    for (; g + 1 < n; ++g) {
      cum += static_cast<double>(room[g]) / total_room;
      if (middle <= cum) break;
    }
    ++counts[g];
    before += static_cast<double>(c);
  }
  // A GPU left without a layer takes one from the GPU with the most (runs follow the counts, so
  // they stay consecutive).
  for (size_t g = 0; g < n; ++g) {
    while (counts[g] == 0) {
      const auto busiest = std::max_element(counts.begin(), counts.end()) - counts.begin();
      if (counts[busiest] < 2) break;
      --counts[busiest];
      ++counts[g];
    }
  }
  return counts;
}

// What GPU g may take (its free memory, or its gpu_split_gib size) and whether its share fits.
void judge_share(GpuShare& s, const LoadOptions& options, size_t g, bool manual) {
  s.limit = manual ? static_cast<size_t>(options.gpu_split_gib[g] * double(size_t{1} << 30))
                   : s.device_free;
  s.fits =
      s.needed() + options.gpu_reserve_bytes <= s.device_free && (!manual || s.needed() <= s.limit);
}

// Replaces the plan's totals with the sums of its GPUs' shares, and each cache choice's tokens
// with what the tightest GPU allows, GPU g holding per_token(g, bytes) of each token's bytes.
void total_shares(MemoryPlan& plan, const LoadOptions& options,
                  const std::function<size_t(size_t g, size_t bytes_per_token)>& per_token) {
  plan.weights = plan.kv_cache = plan.activations = plan.workspace = plan.adapters = 0;
  plan.device_free = plan.device_total = 0;
  plan.device_name.clear();
  plan.fits = true;
  plan.advice.clear();
  for (const GpuShare& s : plan.gpus) {
    plan.weights += s.weights;
    plan.kv_cache += s.kv_cache;
    plan.activations += s.activations;
    plan.workspace += s.workspace;
    plan.adapters += s.adapters;
    plan.device_free += s.device_free;
    plan.device_total += s.device_total;
    plan.device_name += (plan.device_name.empty() ? "" : " + ") + s.name;
    plan.fits = plan.fits && s.fits;
  }
  for (CacheChoice& choice : plan.cache_choices) {
    int64_t tokens = INT64_MAX;
    for (size_t g = 0; g < plan.gpus.size(); ++g) {
      const GpuShare& s = plan.gpus[g];
      const size_t besides = options.gpu_reserve_bytes + s.needed() - s.kv_cache;
      const size_t bytes = per_token(g, choice.bytes_per_token);
      const size_t free = s.device_free > besides ? s.device_free - besides : 0;
      tokens = std::min<int64_t>(tokens, bytes ? static_cast<int64_t>(free / bytes) : 0);
    }
    choice.tokens_that_fit = tokens == INT64_MAX ? 0 : tokens;
  }
}

// Why a share that does not fit fails: the GPU split's size, or the free memory and reserve.
std::string shortfall(const GpuShare& s, const LoadOptions& options, bool manual) {
  return manual && s.needed() > s.limit
             ? "its GPU split allows " + format_bytes(s.limit) + "."
             : format_bytes(s.device_free) + " is free, " +
                   format_bytes(options.gpu_reserve_bytes) + " of it kept in reserve.";
}

}  // namespace

void place_on_gpus(MemoryPlan& plan, const LoadOptions& options, const ModelInfo& info,
                   const ResolvedLoad& r, const MemoryPlan* draft,
                   const std::vector<DeviceMemoryInfo>& devices, const std::vector<int>& gpus) {
  HEARTH_CHECK(!devices.empty() && devices.size() == gpus.size(), "place_on_gpus: devices");
  const ModelConfig& c = info.config;
  const auto L = static_cast<size_t>(c.num_layers);
  const size_t n = devices.size();
  if (n > L) {
    fail(ErrorCode::kInvalidArgument, std::to_string(n) + " GPUs for " + std::to_string(L) +
                                          " layers: name at most one GPU per layer");
  }
  const bool manual = !options.gpu_split_gib.empty() && n > 1;

  // What the model's parts take: its layers as the files say, the rest spread evenly when the
  // sizes are unknown (synthetic sources).
  std::vector<size_t> layer_weights(L, 0);
  size_t layers_total = 0;
  for (size_t i = 0; i < L && i < info.cuda_layer_bytes.size(); ++i) {
    layer_weights[i] = static_cast<size_t>(info.cuda_layer_bytes[i]);
    layers_total += layer_weights[i];
  }
  size_t embedding = static_cast<size_t>(info.cuda_embedding_bytes);
  if (layers_total == 0 || layers_total + embedding > plan.weights) {
    embedding = static_cast<size_t>(c.vocab_size * c.hidden_size) * 2;
    const size_t rest = plan.weights > 2 * embedding ? plan.weights - 2 * embedding : 0;
    std::fill(layer_weights.begin(), layer_weights.end(), rest / std::max<size_t>(L, 1));
    layers_total = rest / std::max<size_t>(L, 1) * L;
  }
  size_t head = plan.weights - std::min(plan.weights, layers_total + embedding);
  // A head tied to the embedding is its own copy once the two sit on different GPUs.
  if (n > 1 && c.tie_word_embeddings && head < embedding / 2) head += embedding;
  const size_t kv_per_layer = plan.kv_cache / std::max<size_t>(L, 1);
  const size_t adapters_per_layer = plan.adapters / std::max<size_t>(L, 1);
  const size_t logits = static_cast<size_t>(r.max_logit_rows * (c.hidden_size + c.vocab_size)) * 2;
  const size_t activations_inner = plan.activations > logits ? plan.activations - logits : 0;

  std::vector<size_t> fixed(n), room(n), cost(L);
  for (size_t i = 0; i < L; ++i) cost[i] = layer_weights[i] + kv_per_layer + adapters_per_layer;
  for (size_t g = 0; g < n; ++g) {
    const bool first = g == 0, last = g + 1 == n;
    fixed[g] = (last ? plan.activations : activations_inner) + plan.workspace +
               (first ? embedding : 0) + (last ? head : 0);
    if (last && draft) fixed[g] += draft->needed();
    const size_t limit =
        manual ? static_cast<size_t>(options.gpu_split_gib[g] * double(size_t{1} << 30))
               : devices[g].free_bytes;
    const size_t usable =
        manual ? limit
               : (limit > options.gpu_reserve_bytes ? limit - options.gpu_reserve_bytes : 0);
    room[g] = manual ? usable : (usable > fixed[g] ? usable - fixed[g] : 0);
  }
  const std::vector<int64_t> counts = assign_layers(cost, fixed, room, manual);

  plan.gpus.clear();
  int64_t first_layer = 0;
  size_t last_used = 0;
  for (size_t g = 0; g < n; ++g) {
    if (counts[g] > 0) last_used = g;
  }
  for (size_t g = 0; g <= last_used; ++g) {
    GpuShare s;
    s.device = gpus[g];
    s.name = devices[g].name;
    s.first_layer = first_layer;
    s.layers = counts[g];
    for (int64_t i = first_layer; i < first_layer + counts[g]; ++i) {
      s.weights += layer_weights[static_cast<size_t>(i)];
    }
    first_layer += counts[g];
    const auto layers = static_cast<size_t>(counts[g]);
    s.kv_cache = kv_per_layer * layers;
    s.adapters = adapters_per_layer * layers;
    const bool last = g == last_used;
    s.activations = last ? plan.activations : activations_inner;
    s.workspace = plan.workspace;
    if (g == 0) s.weights += embedding;
    if (last) s.weights += head;
    if (last && draft) {
      s.weights += draft->weights;
      s.kv_cache += draft->kv_cache;
      s.activations += draft->activations;
    }
    s.device_free = devices[g].free_bytes;
    s.device_total = devices[g].total_bytes;
    judge_share(s, options, g, manual);
    plan.gpus.push_back(std::move(s));
  }
  // A GPU's cache holds its share of the layers.
  total_shares(plan, options, [&](size_t g, size_t bytes) {
    return bytes * static_cast<size_t>(plan.gpus[g].layers) / std::max<size_t>(L, 1);
  });
  if (plan.fits) return;
  for (const GpuShare& s : plan.gpus) {
    if (s.fits) continue;
    plan.advice = s.name + " needs " + format_bytes(s.needed()) + " for layers " +
                  std::to_string(s.first_layer) + "–" +
                  std::to_string(s.first_layer + s.layers - 1) + " (weights " +
                  format_bytes(s.weights) + ", cache " + format_bytes(s.kv_cache) + ") but " +
                  shortfall(s, options, manual) +
                  (manual ? " Give it fewer layers (a smaller GPU split size there, larger on "
                            "the others), add a GPU, lower max_seq_len or the cache size, or "
                            "choose a smaller quantization."
                          : " Add a GPU, lower max_seq_len or the cache size, choose a "
                            "quantized KV cache, or a smaller quantization.");
    break;
  }
}

namespace {

// Whether the model's quantized layers store their rows in act-order (every EXL2 layer; GPTQ
// with desc_act).
bool act_order_rows(const ModelInfo& info) {
  if (info.format == ModelFormat::kExl2) return true;
  if (info.format != ModelFormat::kGptq) return false;
  try {
    return parse_gptq_config(info.quantization, info.name).desc_act.value_or(false);
  } catch (const Error&) {
    return false;  // the load reports a bad config; the plan only sizes
  }
}

}  // namespace

void place_tensor_parallel(MemoryPlan& plan, const LoadOptions& options, const ModelInfo& info,
                           const ResolvedLoad& r, const std::vector<DeviceMemoryInfo>& devices,
                           const std::vector<int>& gpus) {
  HEARTH_CHECK(devices.size() == gpus.size() && gpus.size() > 1, "place_tensor_parallel: devices");
  const ModelConfig& c = info.config;
  const int n = static_cast<int>(gpus.size());
  const TensorParallelSplit split =
      tensor_parallel_split({c.num_heads, c.num_kv_heads, c.head_dim, c.intermediate_size}, n);
  const bool manual = !options.gpu_split_gib.empty();
  size_t layers_total = 0;
  for (int64_t b : info.cuda_layer_bytes) layers_total += static_cast<size_t>(b);
  size_t embedding = static_cast<size_t>(info.cuda_embedding_bytes);
  if (layers_total == 0 || layers_total + embedding > plan.weights) {
    embedding = static_cast<size_t>(c.vocab_size * c.hidden_size) * 2;
    layers_total = plan.weights > 2 * embedding ? plan.weights - 2 * embedding : 0;
  }
  // Every GPU holds the embedding and the head (a tied head as a copy of its own).
  size_t head = plan.weights - std::min(plan.weights, layers_total + embedding);
  if (c.tie_word_embeddings && head < embedding / 2) head += embedding;
  const double kv_total = static_cast<double>(c.num_kv_heads);
  plan.gpus.clear();
  for (int g = 0; g < n; ++g) {
    // A GPU's share of the layers: its MLP features and heads, by their part of the weights.
    const double mlp_share =
        static_cast<double>(split.mlp_width(g)) / static_cast<double>(c.intermediate_size);
    const double kv_share =
        static_cast<double>(split.kv_heads[g + 1] - split.kv_heads[g]) / kv_total;
    // q, k, v and o by the GPU's heads, except an act-order o: its stored rows mix every head's
    // inputs, so each GPU's shard keeps nearly all of it (the MLP is renumbered to avoid that;
    // o cannot be).
    const double mlp_weights = 3.0 * static_cast<double>(c.intermediate_size);
    const double qkv_weights = static_cast<double>(c.q_dim() + 2 * c.kv_dim());
    const double o_weights = static_cast<double>(c.q_dim());
    const double o_share = act_order_rows(info) ? 1.0 : kv_share;
    const double share = (mlp_weights * mlp_share + qkv_weights * kv_share + o_weights * o_share) /
                         (mlp_weights + qkv_weights + o_weights);
    GpuShare s;
    s.device = gpus[static_cast<size_t>(g)];
    s.name = devices[static_cast<size_t>(g)].name;
    s.first_layer = 0;
    s.layers = c.num_layers;
    s.weights = static_cast<size_t>(static_cast<double>(layers_total) * share) + embedding + head;
    s.kv_cache = static_cast<size_t>(static_cast<double>(plan.kv_cache) * kv_share);
    s.activations = plan.activations;
    s.workspace = plan.workspace;
    s.device_free = devices[static_cast<size_t>(g)].free_bytes;
    s.device_total = devices[static_cast<size_t>(g)].total_bytes;
    judge_share(s, options, static_cast<size_t>(g), manual);
    plan.gpus.push_back(std::move(s));
  }
  // A GPU's cache holds its key/value heads.
  total_shares(plan, options, [&](size_t g, size_t bytes) {
    return static_cast<size_t>(static_cast<double>(bytes) *
                               static_cast<double>(split.kv_heads[g + 1] - split.kv_heads[g]) /
                               kv_total);
  });
  if (plan.fits) return;
  for (const GpuShare& s : plan.gpus) {
    if (s.fits) continue;
    plan.advice = s.name + " needs " + format_bytes(s.needed()) + " for its share of every layer " +
                  "(weights " + format_bytes(s.weights) + ", cache " + format_bytes(s.kv_cache) +
                  ") but " + shortfall(s, options, manual) +
                  " Add a GPU, lower max_seq_len or the cache size, choose a quantized KV cache, "
                  "or a smaller quantization.";
    break;
  }
}

}  // namespace hearth
