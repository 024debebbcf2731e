#include "engine/bench/split_bench.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/backend/cuda/cuda_tensor_parallel.h"
#include "engine/bench/bench_util.h"
#include "engine/bench/quant_bench.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/model/llama_model.h"

namespace hearth {
namespace {

using json = nlohmann::json;
using cuda::CudaBackend;
using cuda::bench::fmt;
using cuda::bench::seconds_since;
using cuda::bench::time_greedy_decode;
using cuda::bench::time_prefill;

// Layers shared as evenly as the count allows, the first GPUs taking the remainder.
std::vector<int64_t> even_layers(int64_t layers, size_t gpus) {
  std::vector<int64_t> counts(gpus, layers / static_cast<int64_t>(gpus));
  for (size_t g = 0; g < static_cast<size_t>(layers % static_cast<int64_t>(gpus)); ++g) {
    ++counts[g];
  }
  return counts;
}

struct Sizes {
  int64_t page = 256;
  int64_t max_prefill = 0;
  int64_t max_batch = 1;
  int64_t seq_pages = 0;
  int64_t num_pages = 0;
  LlamaModelOptions model;
};

Sizes sizes_for(const SplitBenchOptions& o) {
  Sizes z;
  z.max_prefill = o.prefill_lengths.empty()
                      ? 0
                      : *std::max_element(o.prefill_lengths.begin(), o.prefill_lengths.end());
  z.max_batch = o.decode_batches.empty()
                    ? 1
                    : *std::max_element(o.decode_batches.begin(), o.decode_batches.end());
  z.seq_pages = (o.decode_context + o.decode_steps + 16 + z.page - 1) / z.page;
  z.num_pages = std::max((z.max_prefill + z.page - 1) / z.page, z.max_batch * z.seq_pages) + 1;
  z.model.max_seq_len = std::max<int64_t>(z.max_prefill, o.decode_context + o.decode_steps + 16);
  z.model.max_batch_tokens = std::max<int64_t>(z.max_prefill, z.max_batch);
  z.model.max_logit_rows = z.max_batch;
  return z;
}

// Prefill and decode speed of a loaded model whose logits `sampler` holds.
void time_model(json& r, LlamaModel& model, Backend& sampler, const Sizes& z,
                const SplitBenchOptions& o) {
  auto cache = model.create_kv_cache(z.num_pages, z.page);
  json prefill = json::array();
  for (int64_t T : o.prefill_lengths) {
    const double t = time_prefill(model, sampler, *cache, T, z.page);
    prefill.push_back({{"tokens", T}, {"tokens_per_s", static_cast<double>(T) / t}});
  }
  r["prefill"] = prefill;
  json decode = json::array();
  for (int64_t B : o.decode_batches) {
    const double t = time_greedy_decode(model, sampler, *cache, B, z.seq_pages, o.decode_context,
                                        o.decode_steps, false);
    decode.push_back({{"batch", B},
                      {"tokens_per_s", static_cast<double>(B * o.decode_steps) / t},
                      {"step_ms", 1e3 * t / o.decode_steps}});
  }
  r["decode"] = decode;
}

json run_placement(const std::vector<CudaBackend*>& backends, const ModelConfig& config,
                   const TensorSource& weights, const SplitBenchOptions& o) {
  const Sizes z = sizes_for(o);
  LayerPlacement placement;
  placement.layers = even_layers(config.num_layers, backends.size());
  for (CudaBackend* b : backends) placement.backends.push_back(b);
  const auto t0 = std::chrono::steady_clock::now();
  LlamaModel model(config, placement, weights, z.model);
  json r = {{"gpus", backends.size()}, {"layers", placement.layers}};
  r["load_seconds"] = seconds_since(t0);
  json memory = json::array();
  for (CudaBackend* b : backends) {
    const MemoryUsage m = b->memory_usage();
    memory.push_back({{"device", b->device()}, {"weights", m.weights}, {"kv_cache", m.kv_cache}});
  }
  r["memory"] = memory;
  time_model(r, model, *backends.back(), z, o);
  return r;
}

// The same model by tensor parallelism over `gpus`, with the all-reduce of a decode step's,
// 32 rows' and a 2,048-token prefill's hidden rows timed alone.
CudaBackendOptions::AllReduce all_reduce_choice(const std::string& way) {
  if (way == "fused") return CudaBackendOptions::AllReduce::kFused;
  if (way == "peer") return CudaBackendOptions::AllReduce::kPeer;
  if (way == "nccl") return CudaBackendOptions::AllReduce::kNccl;
  fail(ErrorCode::kInvalidArgument, "all-reduce '" + way + "': fused, peer or nccl");
}

json run_tensor_parallel(const std::vector<int>& gpus, const ModelConfig& config,
                         const TensorSource& weights, const SplitBenchOptions& o,
                         CudaBackendOptions::AllReduce all_reduce) {
  const Sizes z = sizes_for(o);
  CudaBackendOptions bo;
  bo.tensor_parallel_all_reduce = all_reduce;
  auto backend = create_tensor_parallel_backend(
      gpus, {config.num_heads, config.num_kv_heads, config.head_dim, config.intermediate_size}, bo);
  const auto t0 = std::chrono::steady_clock::now();
  LlamaModel model(config, *backend, weights, z.model);
  json r = {{"gpus", gpus.size()}};
  r["load_seconds"] = seconds_since(t0);
  r["weights"] = backend->memory_usage().weights;
  time_model(r, model, *backend, z, o);
  json reduce = json::array();
  for (int64_t rows : {int64_t{1}, int64_t{32}, int64_t{2048}}) {
    const double us = tensor_parallel_all_reduce_us(*backend, rows, config.hidden_size);
    const double nccl_us =
        tensor_parallel_all_reduce_us(*backend, rows, config.hidden_size, 200, true);
    const double bytes = static_cast<double>(rows * config.hidden_size) * 2;
    const double n = static_cast<double>(gpus.size());
    // NCCL's "bus bandwidth": what each link carries in a ring all-reduce, per second.
    reduce.push_back({{"rows", rows},
                      {"bytes", bytes},
                      {"microseconds", us},
                      {"nccl_microseconds", nccl_us},
                      {"nccl_bus_gb_per_s", bytes * 2 * (n - 1) / n / (nccl_us * 1e3)},
                      {"per_decode_token_us", rows == 1 ? us * 2 * config.num_layers : 0.0}});
  }
  r["all_reduce"] = reduce;
  return r;
}

// One hand-over as a step makes it (the residual rows of a decode step and of a 2,048-token
// prefill), between the first two GPUs: microseconds per copy.
json handoff_times(CudaBackend& from, CudaBackend& to, int64_t hidden) {
  json out = json::array();
  for (int64_t rows : {int64_t{1}, int64_t{32}, int64_t{2048}}) {
    const DeviceTensor src = from.alloc_activation(rows, hidden);
    const DeviceTensor dst = to.alloc_activation(rows, hidden);
    for (int i = 0; i < 5; ++i) to.receive(from, src, dst, rows);
    to.synchronize();
    const int reps = 200;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < reps; ++i) to.receive(from, src, dst, rows);
    to.synchronize();
    from.synchronize();
    const double us = seconds_since(start) * 1e6 / reps;
    out.push_back({{"rows", rows}, {"bytes", src.nbytes()}, {"microseconds", us}});
  }
  return out;
}

// One run's line of the report (and its all-reduce times, for tensor parallelism).
std::string describe_run(const std::string& key, const json& r) {
  std::string text = key + ": ";
  if (r.contains("error")) return text + r["error"].get<std::string>() + "\n";
  for (const json& p : r["prefill"]) {
    text += "prefill " + fmt("%.0f", p["tokens"].get<double>()) + " " +
            fmt("%.0f tok/s", p["tokens_per_s"].get<double>()) + "; ";
  }
  for (const json& d : r["decode"]) {
    text += "batch " + fmt("%.0f", d["batch"].get<double>()) + " " +
            fmt("%.1f tok/s", d["tokens_per_s"].get<double>()) + "; ";
  }
  text += "load " + fmt("%.1f s", r["load_seconds"].get<double>()) + "\n";
  if (!r.contains("all_reduce")) return text;
  for (const json& a : r["all_reduce"]) {
    text += "all-reduce of " + fmt("%.0f", a["rows"].get<double>()) +
            " rows: " + fmt("%.1f us", a["microseconds"].get<double>()) + "; NCCL alone " +
            fmt("%.1f us", a["nccl_microseconds"].get<double>()) + " (" +
            fmt("%.1f GB/s bus", a["nccl_bus_gb_per_s"].get<double>()) + ")\n";
  }
  return text;
}

}  // namespace

SplitBenchReport run_layer_split_benchmark(const SplitBenchOptions& o) {
  if (o.gpus.size() < 2) fail(ErrorCode::kInvalidArgument, "a layer split needs two GPUs or more");
  const int available = cuda_device_count();
  std::vector<std::unique_ptr<CudaBackend>> owned;
  std::vector<CudaBackend*> backends;
  for (int g : o.gpus) {
    if (g < 0 || g >= available) {
      fail(ErrorCode::kInvalidArgument, "GPU " + std::to_string(g) + " does not exist (" +
                                            std::to_string(available) + " found)");
    }
    CudaBackendOptions bo;
    bo.device = g;
    owned.push_back(std::make_unique<CudaBackend>(bo));
    backends.push_back(owned.back().get());
  }
  ModelConfig config = synthetic_model_config(o.model);
  std::unique_ptr<TensorSource> weights;
  if (o.quant.empty()) {
    weights = std::make_unique<SyntheticSource>(config, o.seed, DType::kF16);
  } else {
    const QuantSpec q = parse_quant(o.quant);
    auto source = std::make_unique<SyntheticQuantSource>(config, q.options);
    config.quantization_config_json = source->quantization_config_json();
    weights = std::move(source);
  }
  const std::string label = o.model + " " + (o.quant.empty() ? "fp16" : o.quant);
  SplitBenchReport report;
  report.json = {{"model", o.model}, {"quant", o.quant.empty() ? "fp16" : o.quant}};
  report.json["handoff"] = handoff_times(*backends[0], *backends[1], config.hidden_size);
  report.text = "== " + label + ", layer split over " + std::to_string(o.gpus.size()) + " GPUs (" +
                backends[0]->device_info().name + ")\n";
  for (const json& h : report.json["handoff"]) {
    report.text += "hand-over of " + fmt("%.0f", h["rows"].get<double>()) +
                   " rows: " + fmt("%.1f us", h["microseconds"].get<double>()) + "\n";
  }
  // Runs one way of placing the model, unless its weights cannot fit the GPUs it uses (loading
  // only to run out of memory would take minutes on the largest shapes).
  auto run = [&](const char* key, const std::vector<int>& devices,
                 const std::function<json()>& body) {
    try {
      size_t free = 0;
      for (int d : devices) free += cuda_free_memory(d);
      if (weights->file_bytes() > free) {
        fail(ErrorCode::kOutOfMemory, "the weights (" +
                                          fmt("%.1f GB", weights->file_bytes() / 1e9) +
                                          ") exceed the free memory");
      }
      report.json[key] = body();
    } catch (const Error& e) {
      report.json[key] = {{"error", e.what()}};
    }
    report.text += describe_run(key, report.json[key]);
  };
  if (o.single_gpu) {
    run("one_gpu", {o.gpus[0]}, [&] { return run_placement({backends[0]}, config, *weights, o); });
  }
  if (o.layer_split) {
    run("layer_split", o.gpus, [&] { return run_placement(backends, config, *weights, o); });
  }
  if (o.tensor_parallel) {
    owned.clear();  // the tensor-parallel backend makes its own
    backends.clear();
    for (const std::string& way : o.all_reduce) {
      const std::string key = way == "fused" ? "tensor_parallel" : "tensor_parallel_" + way;
      run(key.c_str(), o.gpus,
          [&] { return run_tensor_parallel(o.gpus, config, *weights, o, all_reduce_choice(way)); });
    }
  }
  return report;
}

}  // namespace hearth
