#include "engine/bench/quant_bench.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/bench/bench_util.h"
#include "engine/bench/synthetic_lora.h"
#include "engine/bench/synthetic_quant_source.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/formats/quantized_linear_loader.h"
#include "engine/model/llama_model.h"

namespace hearth {
namespace {

using cuda::check_cuda;
using cuda::CudaBackend;
using cuda::DeviceBuffer;
using json = nlohmann::json;
using cuda::bench::copy_bandwidth_gbs;
using cuda::bench::datasheet_fp16_tflops;
using cuda::bench::fmt;
using cuda::bench::kDecodeWarmSteps;
using cuda::bench::median;
using cuda::bench::prefill_flops;
using cuda::bench::seconds_since;
using cuda::bench::time_check_steps;
using cuda::bench::time_greedy_decode;
using cuda::bench::time_ms;
using cuda::bench::time_prefill;
using cuda::bench::tokens_for;

}  // namespace

QuantSpec parse_quant(const std::string& s) {
  std::vector<std::string> f;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ':');) f.push_back(item);
  QuantSpec q;
  q.label = s;
  try {
    if (f.size() == 2 && f[0] == "exl2") {
      q.options.format = "exl2";
      q.options.bpw = std::stod(f[1]);
      if (q.options.bpw < 2.0 || q.options.bpw > 8.5) throw std::invalid_argument("bpw");
      return q;
    }
    if (f.size() >= 3 && f[0] == "gptq") {
      q.options.format = "gptq";
      q.options.gptq.bits = std::stoi(f[1]);
      q.options.gptq.group_size = std::stoll(f[2]);
      for (size_t i = 3; i < f.size(); ++i) {
        if (f[i] == "noact")
          q.options.gptq.act_order = false;
        else if (f[i] == "asym")
          q.options.gptq.sym = false;
        else
          throw std::invalid_argument(f[i]);
      }
      const int b = q.options.gptq.bits;
      if (b != 2 && b != 3 && b != 4 && b != 8) throw std::invalid_argument("bits");
      return q;
    }
  } catch (const std::exception&) {
  }
  fail(ErrorCode::kInvalidArgument,
       "quantization \"" + s + "\": expected exl2:<bpw> or gptq:<bits>:<group>[:noact][:asym]");
}

namespace {

// The fused kernel alone on the model's weight shapes: enough copies of each layer to defeat
// the L2 cache, timed over rotating copies.
json kernel_sweep(CudaBackend& be, const ModelConfig& c, const QuantSpec& q) {
  const int64_t H = c.hidden_size;
  struct Shape {
    const char* name;
    int64_t k, n;
  };
  const std::vector<Shape> shapes = {{"q/o", H, c.q_dim()},
                                     {"k/v", H, c.kv_dim()},
                                     {"gate/up", H, c.intermediate_size},
                                     {"down", c.intermediate_size, H},
                                     {"lm_head", H, c.vocab_size}};
  json out = json::array();
  for (const Shape& s : shapes) {
    std::map<std::string, HostTensor, std::less<>> t;
    QuantizedLinearOptions lo;
    if (q.options.format == "exl2") {
      make_exl2_layer(t, "w", s.k, s.n,
                      std::string(s.name) == "lm_head" ? exl2_head_recipe()
                                                       : exl2_recipe_for_bpw(q.options.bpw),
                      7);
      lo.out_features = s.n;
    } else {
      make_gptq_layer(t, "w", s.k, s.n, q.options.gptq, 7);
      lo.quantization_config_json = gptq_config_json(q.options.gptq);
    }
    MemoryTensorSource src(std::move(t));
    LinearSource ls;
    ls.name = std::string("sweep ") + s.name;
    ls.quantized = load_quantized_linear(src, "w", lo);
    auto first = be.upload_linear(ls);
    const size_t bytes = first->device_bytes();
    const int copies = static_cast<int>(std::clamp<size_t>((size_t(256) << 20) / bytes, 1, 32));
    std::vector<std::unique_ptr<BackendWeight>> w;
    w.push_back(std::move(first));
    for (int i = 1; i < copies; ++i) w.push_back(be.upload_linear(ls));
    DeviceTensor x = be.alloc_activation(32, s.k);
    DeviceTensor y = be.alloc_activation(32, s.n);
    for (int64_t rows : {1, 8, 32}) {
      const double ms = time_ms(
          be.stream(),
          [&](int i) {
            be.linear(*w[static_cast<size_t>(i) % w.size()], x.first_rows(rows),
                      y.first_rows(rows));
          },
          5, 40);
      out.push_back({{"quant", q.label},
                     {"shape", s.name},
                     {"k", s.k},
                     {"n", s.n},
                     {"rows", rows},
                     {"us", ms * 1e3},
                     {"weight_bytes", bytes},
                     {"bpw", ls.quantized->bits_per_weight()},
                     {"gbs", static_cast<double>(bytes) / (ms * 1e-3) / 1e9}});
    }
  }
  return out;
}

json bench_one(CudaBackend& be, const std::string& model, const QuantSpec& q,
               const QuantBenchOptions& o, double copy_gbs, double nominal_gbs, std::string& text) {
  ModelConfig config = synthetic_model_config(model);
  const int64_t full_layers = config.num_layers;
  const int64_t max_prefill =
      o.prefill_lengths.empty()
          ? 0
          : *std::max_element(o.prefill_lengths.begin(), o.prefill_lengths.end());
  const int64_t max_batch = o.decode_batches.empty() ? 1
                                                     : *std::max_element(o.decode_batches.begin(),
                                                                         o.decode_batches.end());
  const int64_t page = 256;
  const int64_t seq_pages = (o.decode_context + o.decode_steps + 16 + page - 1) / page;
  // The prefix step: sequences, new tokens each, cached positions (whole pages).
  const bool prefix_step = o.prefix_step.size() == 3;
  const int64_t ps_seqs = prefix_step ? o.prefix_step[0] : 0;
  const int64_t ps_new = prefix_step ? o.prefix_step[1] : 0;
  const int64_t ps_cached = prefix_step ? o.prefix_step[2] / page * page : 0;
  const int64_t ps_pages = ps_cached / page + ps_seqs * ((ps_new + page - 1) / page);
  const int64_t num_pages =
      std::max({(max_prefill + page - 1) / page, max_batch * seq_pages, ps_pages}) + 1;
  const int64_t max_tokens = std::max({max_prefill, max_batch, ps_seqs * ps_new, ps_cached});
  auto needed = [&](int64_t layers) {
    ModelConfig c = config;
    c.num_layers = layers;
    const SyntheticQuantSource shapes(c, q.options);
    const double weights = static_cast<double>(shapes.file_bytes()) * 1.05;
    const double acts =
        static_cast<double>(max_tokens) *
            (3 * c.hidden_size + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.intermediate_size) * 2.0 +
        static_cast<double>(max_batch) * (c.hidden_size + c.vocab_size) * 2.0;
    KvCacheSpec spec{layers, c.num_kv_heads, c.head_dim, page, num_pages, o.kv_cache_type};
    const double kv = static_cast<double>(spec.bytes());
    const double dequant = 64.0 * (1 << 20);
    return weights + acts + kv + dequant;
  };
  const double budget = static_cast<double>(cuda_free_memory(be.device())) * o.memory_fraction;
  bool truncated = false;
  while (config.num_layers > 1 && needed(config.num_layers) > budget) {
    --config.num_layers;
    truncated = true;
  }
  json r = {{"model", model},
            {"quant", q.label},
            {"layers_run", config.num_layers},
            {"layers", full_layers},
            {"truncated", truncated}};
  if (needed(config.num_layers) > budget) {
    r["error"] = "does not fit even with one layer";
    return r;
  }
  const auto t0 = std::chrono::steady_clock::now();
  SyntheticQuantSource weights(config, q.options);
  config.quantization_config_json = weights.quantization_config_json();
  LlamaModelOptions mo;
  mo.max_seq_len =
      std::max<int64_t>({max_prefill, o.decode_context + o.decode_steps + 16, ps_cached + ps_new});
  mo.max_batch_tokens = max_tokens;
  const int64_t max_check =
      o.check_tokens.empty() ? 1 : *std::max_element(o.check_tokens.begin(), o.check_tokens.end());
  mo.max_logit_rows = std::max({max_batch, max_check, ps_seqs});
  std::optional<LlamaModel> model_storage;
  model_storage.emplace(config, be, weights, mo);
  LlamaModel& lm = *model_storage;
  auto cache = be.create_kv_cache(lm.kv_cache_spec(num_pages, page, o.kv_cache_type));
  r["load_seconds"] = seconds_since(t0);
  const MemoryUsage mem = be.memory_usage();
  // What the cache costs per token, and how many 8,192-token sequences the memory left beside the
  // weights and activations (this cache's included, 5 % kept back) would hold at full depth.
  const size_t token_bytes = cache->spec().bytes_per_token() * static_cast<size_t>(full_layers) /
                             static_cast<size_t>(config.num_layers);
  const double room = 0.95 * static_cast<double>(mem.device_free + mem.kv_cache) -
                      static_cast<double>(mem.weights) *
                          (static_cast<double>(full_layers) / config.num_layers - 1.0);
  r["kv_cache_type"] = kv_cache_type_name(o.kv_cache_type);
  r["kv_bytes_per_token_full_depth"] = token_bytes;
  r["sequences_of_8192_tokens_that_fit"] =
      room > 0 ? static_cast<int64_t>(room / (8192.0 * static_cast<double>(token_bytes))) : 0;
  const double embed_bytes = static_cast<double>(config.vocab_size * config.hidden_size) * 2.0;
  const double weight_bytes = static_cast<double>(mem.weights) - embed_bytes;
  r["weights_bytes_read_per_step"] = weight_bytes;
  r["memory_weights"] = mem.weights;

  json prefill = json::array();
  json prefix_steps = json::array();
  const double peak_tflops = datasheet_fp16_tflops(be.device_info().name);
  // The backend's slices first (0), then each size asked for.
  std::vector<int64_t> slices = {0};
  slices.insert(slices.end(), o.dequant_slice_mib.begin(), o.dequant_slice_mib.end());
  for (int64_t mib : slices) {
    be.set_dequant_slice_bytes(static_cast<size_t>(mib) << 20);
    for (int64_t T : o.prefill_lengths) {
      const double t = time_prefill(lm, be, *cache, T, page);
      const double tflops = prefill_flops(config, T) / t / 1e12;
      prefill.push_back(
          {{"tokens", T},
           {"dequant_slice_mib", mib},
           {"seconds", t},
           {"tokens_per_s", static_cast<double>(T) / t},
           {"tflops", tflops},
           {"share_of_datasheet_peak", peak_tflops > 0 ? tflops / peak_tflops : 0.0}});
    }
    if (prefix_step) {
      const double t = cuda::bench::time_prefix_step(lm, be, *cache, ps_seqs, ps_new, ps_cached,
                                                     page, o.profile_decode_step && mib == 0);
      prefix_steps.push_back({{"sequences", ps_seqs},
                              {"new_tokens", ps_new},
                              {"cached", ps_cached},
                              {"dequant_slice_mib", mib},
                              {"seconds", t}});
    }
  }
  be.set_dequant_slice_bytes(0);
  r["prefill"] = prefill;
  r["prefix_steps"] = prefix_steps;

  auto decode_run = [&](int64_t B) {
    const int warm = kDecodeWarmSteps;
    // With LoRA the profiled step is the first one with an adapter (below).
    const double t =
        time_greedy_decode(lm, be, *cache, B, seq_pages, o.decode_context, o.decode_steps,
                           o.profile_decode_step && o.lora_rank == 0 && o.check_tokens.empty());
    const double tok_s = static_cast<double>(B * o.decode_steps) / t;
    const double avg_ctx = static_cast<double>(o.decode_context) + warm + o.decode_steps / 2.0;
    const double kv_bytes =
        static_cast<double>(B) * static_cast<double>(cache->spec().bytes_per_token()) * avg_ctx;
    const double step_bytes = weight_bytes + kv_bytes;
    const double limit = copy_gbs * 1e9 / step_bytes * static_cast<double>(B);
    const double nominal_limit = nominal_gbs * 1e9 / step_bytes * static_cast<double>(B);
    return json{{"batch", B},
                {"tokens_per_s", tok_s},
                {"step_ms", 1e3 * t / o.decode_steps},
                {"bytes_per_step", step_bytes},
                {"bandwidth_limit_tokens_per_s", limit},
                {"share_of_bandwidth_limit", tok_s / limit},
                {"share_of_nominal_bandwidth", nominal_limit > 0 ? tok_s / nominal_limit : 0.0},
                {"achieved_gbs", step_bytes * o.decode_steps / t / 1e9}};
  };
  json decode = json::array();
  for (int64_t B : o.decode_batches) decode.push_back(decode_run(B));
  r["decode"] = decode;
  json checks = json::array();
  if (!o.check_tokens.empty()) {
    // With check tokens the profiled step is the first check step of the most tokens.
    auto step_ms = [&](int64_t k) {
      const bool profile = o.profile_decode_step && k == max_check;
      return 1e3 *
             time_check_steps(lm, be, *cache, k, seq_pages, o.decode_context, o.decode_steps,
                              profile) /
             o.decode_steps;
    };
    const double one = step_ms(1);
    for (int64_t k : o.check_tokens) {
      const double ms = k == 1 ? one : step_ms(k);
      checks.push_back({{"tokens", k}, {"step_ms", ms}, {"cost_vs_one_token", ms / one}});
    }
  }
  r["check_steps"] = checks;
  json lora = json::array();
  if (o.lora_rank > 0) {
    std::vector<std::shared_ptr<const LoraAdapter>> slots;
    for (int i = 0; i < o.lora_adapters; ++i) {
      slots.push_back(synthetic_lora_adapter(config, o.lora_rank, 900 + static_cast<uint64_t>(i)));
    }
    lm.set_adapters(slots);
    r["lora_bytes"] = lm.adapter_bytes();
    for (size_t i = 0; i < o.decode_batches.size(); ++i) {
      const int64_t B = o.decode_batches[i];
      const double base_ms = decode[i]["step_ms"].get<double>();
      // One adapter for all; then adapter b % N for sequence b.
      std::vector<std::vector<float>> one = {{1.0f}}, spread;
      for (int a = 0; a < o.lora_adapters; ++a) {
        spread.emplace_back(static_cast<size_t>(a + 1), 0.0f);
        spread.back()[static_cast<size_t>(a)] = 1.0f;
      }
      for (const auto* weights : {&one, &spread}) {
        if (weights == &spread && B < 2) continue;
        // Folded into the quantized linears (the default), Hearth's separate LoRA kernels, and
        // (for more than one row) cuBLAS: those of QuantBenchOptions::lora_paths.
        for (const std::string& path : o.lora_paths) {
          if (path == "cublas" && B < 2) continue;
          be.set_lora_fold_max_rows(path == "fused" ? kernels::kQuantGemmLoraMaxRows : 0);
          be.set_lora_kernel_max_rows(path == "cublas" ? 0
                                      : path == "kernels"
                                          ? kernels::kLoraKernelMaxRows
                                          : CudaBackendOptions{}.lora_kernel_max_rows);
          const bool profile =
              o.profile_decode_step && i == 0 && path == "fused" && weights == &one;
          const int64_t folded_before = be.folded_loras();
          const double t = time_greedy_decode(lm, be, *cache, B, seq_pages, o.decode_context,
                                              o.decode_steps, profile, weights);
          // "fused" falls back to the separate paths where the adapters do not fit the fold.
          const bool folded = be.folded_loras() > folded_before;
          const double ms = 1e3 * t / o.decode_steps;
          lora.push_back({{"batch", B},
                          {"adapters", weights == &one ? 1 : o.lora_adapters},
                          {"rank", o.lora_rank},
                          {"path", path == "fused" && !folded ? "fused (not folded)" : path},
                          {"step_ms", ms},
                          {"tokens_per_s", static_cast<double>(B * o.decode_steps) / t},
                          {"slowdown_vs_base", ms / base_ms - 1.0}});
        }
        be.set_lora_kernel_max_rows(CudaBackendOptions{}.lora_kernel_max_rows);
        be.set_lora_fold_max_rows(CudaBackendOptions{}.lora_fold_max_rows);
      }
    }
    lm.set_adapters({});
  }
  r["lora_decode"] = lora;
  if (truncated && !decode.empty()) {
    const double head = static_cast<double>(config.vocab_size * config.hidden_size);
    const double per_layer =
        static_cast<double>(config.hidden_size * (config.q_dim() * 2 + config.kv_dim() * 2) +
                            3 * config.hidden_size * config.intermediate_size);
    const double run = per_layer * config.num_layers + head;
    const double full = per_layer * full_layers + head;
    r["full_depth_estimate_decode_batch1_tokens_per_s"] =
        decode[0]["tokens_per_s"].get<double>() * run / full;
  }
  model_storage.reset();
  cache.reset();

  text += "\n== " + model + " " + q.label +
          (truncated ? " (first " + std::to_string(config.num_layers) + " of " +
                           std::to_string(full_layers) + " layers)"
                     : "") +
          fmt(", %.2f GB of weights read per token", weight_bytes / 1e9) +
          fmt(", load %.1f s\n", r["load_seconds"].get<double>());
  text += std::string(kv_cache_type_name(o.kv_cache_type)) +
          fmt(" KV cache: %.0f KiB per token at full depth, ",
              r["kv_bytes_per_token_full_depth"].get<double>() / 1024.0) +
          fmt("%.0f sequences of 8,192 tokens fit\n",
              r["sequences_of_8192_tokens_that_fit"].get<double>());
  // Lines measured with another dequantization slice than the default say which.
  auto slice_label = [&](const json& e) {
    const double mib = e["dequant_slice_mib"].get<double>();
    return mib > 0 ? fmt("[slices %3.0f MiB] ", mib) : std::string();
  };
  for (const auto& e : prefill) {
    text += slice_label(e) + fmt("prefill %6.0f tokens: ", e["tokens"].get<double>()) +
            fmt("%9.0f tokens/s, ", e["tokens_per_s"].get<double>()) +
            fmt("%6.1f TFLOP/s, ", e["tflops"].get<double>()) +
            fmt("%5.1f%% of the datasheet's fp16 tensor-core peak\n",
                100 * e["share_of_datasheet_peak"].get<double>());
  }
  for (const auto& e : prefix_steps) {
    text += slice_label(e) + fmt("prefix step: %.0f sequences ", e["sequences"].get<double>()) +
            fmt("x %.0f new tokens ", e["new_tokens"].get<double>()) +
            fmt("after %.0f cached: ", e["cached"].get<double>()) +
            fmt("%.2f ms\n", 1e3 * e["seconds"].get<double>());
  }
  text += "decode batch | tokens/s | ms/step | GB/s | % of measured limit | % of nominal\n";
  for (const auto& e : decode) {
    text += fmt("%12.0f | ", e["batch"].get<double>()) +
            fmt("%8.1f | ", e["tokens_per_s"].get<double>()) +
            fmt("%7.3f | ", e["step_ms"].get<double>()) +
            fmt("%4.0f | ", e["achieved_gbs"].get<double>()) +
            fmt("%18.1f%% | ", 100 * e["share_of_bandwidth_limit"].get<double>()) +
            fmt("%11.1f%%\n", 100 * e["share_of_nominal_bandwidth"].get<double>());
  }
  if (r.contains("full_depth_estimate_decode_batch1_tokens_per_s")) {
    text += fmt("estimated full-depth batch-1 decode: %.1f tokens/s\n",
                r["full_depth_estimate_decode_batch1_tokens_per_s"].get<double>());
  }
  if (!lora.empty()) {
    text += "LoRA rank " + std::to_string(o.lora_rank) +
            " on all seven projections: batch | adapters | path | tokens/s | ms/step | slowdown\n";
  }
  for (const auto& e : lora) {
    text += fmt("%5.0f | ", e["batch"].get<double>()) +
            fmt("%8.0f | ", e["adapters"].get<double>()) + e["path"].get<std::string>() + " | " +
            fmt("%8.1f | ", e["tokens_per_s"].get<double>()) +
            fmt("%7.3f | ", e["step_ms"].get<double>()) +
            fmt("%+.1f%%\n", 100 * e["slowdown_vs_base"].get<double>());
  }
  if (!checks.empty()) text += "check tokens | ms/step | cost vs one token\n";
  for (const auto& e : checks) {
    text += fmt("%12.0f | ", e["tokens"].get<double>()) +
            fmt("%7.3f | ", e["step_ms"].get<double>()) +
            fmt("%.3fx\n", e["cost_vs_one_token"].get<double>());
  }
  return r;
}

}  // namespace

QuantBenchReport run_quant_benchmark(const QuantBenchOptions& o) {
  std::vector<QuantSpec> quants;
  for (const auto& s : o.quants) quants.push_back(parse_quant(s));
  for (const auto& m : o.models) synthetic_model_config(m);  // unknown names fail early
  CudaBackendOptions bo;
  bo.device = o.device;
  if (o.fold_norm_max_rows >= 0) bo.fold_norm_max_rows = o.fold_norm_max_rows;
  if (o.slice_sum_kernel_min_rows >= 0) bo.slice_sum_kernel_min_rows = o.slice_sum_kernel_min_rows;
  if (o.staged_x_min_rows >= 0) bo.staged_x_min_rows = o.staged_x_min_rows;
  if (o.lora_delta_max_rows >= 0) bo.lora_delta_max_rows = o.lora_delta_max_rows;
  if (o.quant_fused_max_rows >= 0) bo.quant_fused_max_rows = o.quant_fused_max_rows;
  if (o.quant_mma_min_rows >= 0) bo.quant_mma_min_rows = o.quant_mma_min_rows;
  if (o.quant_mma_max_rows >= 0) bo.quant_mma_max_rows = o.quant_mma_max_rows;
  if (!o.quant_mma_blocks.empty()) {
    bo.quant_mma_wide_blocks = o.quant_mma_blocks != "tall";
    bo.quant_mma_wgmma = o.quant_mma_blocks == "wgmma";
  }
  if (o.decode_attention_blocks_per_sm >= 0)
    bo.decode_attention_blocks_per_sm = o.decode_attention_blocks_per_sm;
  if (o.decode_attention_tensor_cores >= 0)
    bo.decode_attention_tensor_cores = o.decode_attention_tensor_cores != 0;
  if (o.attention_warps > 0) bo.attention_warps = o.attention_warps;
  if (o.attention_warp_tiles > 0) bo.attention_warp_tiles = o.attention_warp_tiles;
  if (o.attention_warpgroup_mma >= 0) bo.attention_warpgroup_mma = o.attention_warpgroup_mma != 0;
  if (o.dequant_overlap >= 0) bo.dequant_overlap = o.dequant_overlap != 0;
  if (o.cuda_graphs >= 0) bo.cuda_graphs = o.cuda_graphs != 0;
  auto backend = create_cuda_backend(bo);
  auto& be = static_cast<CudaBackend&>(*backend);
  const CudaDeviceInfo& info = be.device_info();
  QuantBenchReport report;
  json& j = report.json;
  const double copy_gbs = copy_bandwidth_gbs(be);
  j["device"] = {{"name", info.name},
                 {"multiprocessors", info.multiprocessors},
                 {"memory_bytes", info.total_bytes},
                 {"nominal_bandwidth_gbs", info.memory_bandwidth_gbs},
                 {"copy_bandwidth_gbs", copy_gbs}};
  std::string& text = report.text;
  text += "device: " + info.name + ", " + std::to_string(info.multiprocessors) + " SMs; copy " +
          fmt("%.0f GB/s", copy_gbs) + " (nominal " +
          fmt("%.0f GB/s)\n", info.memory_bandwidth_gbs);
  if (o.kernel_sweep && !o.models.empty()) {
    const ModelConfig c = synthetic_model_config(o.models.front());
    json sweep = json::array();
    text += "\nfused quantized GEMM alone (" + o.models.front() + " shapes):\n";
    text += "quant        shape     rows |   us    GB/s  (bpw)\n";
    for (const QuantSpec& q : quants) {
      try {
        for (const auto& e : kernel_sweep(be, c, q)) {
          sweep.push_back(e);
          std::string line = q.label;
          line.resize(std::max<size_t>(line.size(), 12), ' ');
          std::string shape = e["shape"].get<std::string>();
          shape.resize(std::max<size_t>(shape.size(), 9), ' ');
          text += line + " " + shape + fmt("%4.0f | ", e["rows"].get<double>()) +
                  fmt("%6.1f ", e["us"].get<double>()) + fmt("%6.0f ", e["gbs"].get<double>()) +
                  fmt("(%.2f)\n", e["bpw"].get<double>());
        }
      } catch (const Error& e) {
        text += q.label + ": " + e.what() + "\n";
        sweep.push_back({{"quant", q.label}, {"error", e.what()}});
      }
    }
    j["kernel_sweep"] = sweep;
  }
  j["runs"] = json::array();
  for (const auto& model : o.models) {
    for (const QuantSpec& q : quants) {
      try {
        j["runs"].push_back(bench_one(be, model, q, o, copy_gbs, info.memory_bandwidth_gbs, text));
      } catch (const Error& e) {
        j["runs"].push_back({{"model", model}, {"quant", q.label}, {"error", e.what()}});
        text += "\n== " + model + " " + q.label + ": " + e.what() + "\n";
        if (e.code() == ErrorCode::kBackend) return report;
      }
    }
  }
  return report;
}

}  // namespace hearth
