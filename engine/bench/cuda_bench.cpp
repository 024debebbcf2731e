#include "engine/bench/cuda_bench.h"

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <optional>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend_impl.h"
#include "engine/backend/cuda/cuda_check.h"
#include "engine/bench/bench_util.h"
#include "engine/bench/synthetic_source.h"
#include "engine/core/error.h"
#include "engine/model/llama_model.h"

namespace hearth {
namespace {

using cuda::check_cublas;
using cuda::check_cuda;
using cuda::check_launch;
using cuda::CudaBackend;
using cuda::DeviceBuffer;
using json = nlohmann::json;
using cuda::bench::copy_bandwidth_gbs;
using cuda::bench::datasheet_fp16_tflops;
using cuda::bench::fmt;
using cuda::bench::kDecodeWarmSteps;
using cuda::bench::median;
using cuda::bench::model_numbers;
using cuda::bench::ModelNumbers;
using cuda::bench::prefill_flops;
using cuda::bench::seconds_since;
using cuda::bench::time_greedy_decode;
using cuda::bench::time_ms;
using cuda::bench::time_prefill;
using cuda::bench::tokens_for;

// The prefill attention blocks the backend may use (CudaBackendOptions::attention_warps,
// attention_warp_tiles and, where the device runs sm_90a code, attention_warpgroup_mma),
// compared by the attention sweep and the prefill variants.
std::vector<kernels::PrefillBlock> prefill_blocks() {
  std::vector<kernels::PrefillBlock> blocks = {{4, 1}, {8, 1}, {4, 2}, {8, 2}};
  if (kernels::wgmma_supported()) {
    blocks.push_back({4, 1, true});
    blocks.push_back({8, 1, true});
  }
  return blocks;
}

// "8x2"; tiles 0 (the backend's choice per launch): "8xauto". On the warpgroup MMA: "wg2" (two
// warpgroups), "wgauto".
std::string block_name(kernels::PrefillBlock b) {
  if (b.warpgroup_mma) return "wg" + (b.warp_tiles > 0 ? std::to_string(b.warps / 4) : "auto");
  return std::to_string(b.warps) + "x" + (b.warp_tiles > 0 ? std::to_string(b.warp_tiles) : "auto");
}

kernels::PrefillBlock chosen_block(const CudaBackend& be) {
  return {be.attention_warps(), be.attention_warp_tiles(), be.attention_warpgroup_mma()};
}

void choose_block(CudaBackend& be, kernels::PrefillBlock b) {
  be.set_attention_block(b.warps, b.warp_tiles);
  be.set_attention_warpgroup_mma(b.warpgroup_mma);
}

json copy_bandwidth(CudaBackend& be) {
  double ms = 0;
  const double gbs = cuda::bench::copy_bandwidth_gbs(be, &ms);
  return {{"bytes", size_t(1) << 30}, {"ms", ms}, {"gbs", gbs}};
}

json gemm_peak(CudaBackend& be, DType dtype) {
  const int n = 8192;
  const size_t bytes = size_t(n) * n * 2;
  DeviceBuffer a = be.alloc_workspace(bytes, "GEMM test");
  DeviceBuffer b = be.alloc_workspace(bytes, "GEMM test");
  DeviceBuffer c = be.alloc_workspace(bytes, "GEMM test");
  const kernels::Elem e = cuda::to_elem(dtype);
  check_launch(kernels::fill_random({be.stream(), false, 0}, e, a.get(), int64_t(n) * n, 1, 1.0f),
               "fill");
  check_launch(kernels::fill_random({be.stream(), false, 0}, e, b.get(), int64_t(n) * n, 2, 1.0f),
               "fill");
  const cudaDataType_t t = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  const float alpha = 1.0f, beta = 0.0f;
  const double ms = time_ms(
      be.stream(),
      [&](int) {
        check_cublas(cuda::cublas().GemmEx(be.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, n, n, n, &alpha,
                                           a.get(), t, n, b.get(), t, n, &beta, c.get(), t, n,
                                           CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                     "GEMM");
      },
      3, 10);
  const double tflops = 2.0 * n * double(n) * n / (ms * 1e-3) / 1e12;
  return {{"m", n}, {"n", n}, {"k", n}, {"ms", ms}, {"tflops", tflops}};
}

// GEMV (tensor-core, split-K) against cuBLAS for each weight shape and row count. Weights are
// rotated over enough copies to defeat the L2 cache.
json kernel_sweep(CudaBackend& be, const ModelConfig& c, DType dtype) {
  const int64_t H = c.hidden_size;
  struct Shape {
    const char* name;
    int64_t n, k;
  };
  const std::vector<Shape> shapes = {{"q/o", H, c.q_dim()},
                                     {"k/v", c.kv_dim(), H},
                                     {"gate/up", c.intermediate_size, H},
                                     {"down", H, c.intermediate_size},
                                     {"lm_head", c.vocab_size, H}};
  const kernels::Elem e = cuda::to_elem(dtype);
  const cudaDataType_t t = dtype == DType::kBF16 ? CUDA_R_16BF : CUDA_R_16F;
  const kernels::Launch launch{be.stream(), be.pdl(), be.device_info().multiprocessors};
  json out = json::array();
  for (const Shape& s : shapes) {
    const size_t wbytes = static_cast<size_t>(s.n * s.k) * 2;
    const int copies = static_cast<int>(std::clamp<size_t>((size_t(512) << 20) / wbytes, 1, 64));
    std::vector<DeviceBuffer> w;
    for (int i = 0; i < copies; ++i) {
      w.push_back(be.alloc_workspace(wbytes, "sweep weights"));
      check_launch(kernels::fill_random({be.stream(), false, 0}, e, w.back().get(), s.n * s.k,
                                        10 + i, 0.02f),
                   "fill");
    }
    const int64_t max_rows = 64;
    DeviceBuffer x = be.alloc_workspace(static_cast<size_t>(max_rows * s.k) * 2, "sweep x");
    DeviceBuffer y = be.alloc_workspace(static_cast<size_t>(max_rows * s.n) * 2, "sweep y");
    check_launch(kernels::fill_random({be.stream(), false, 0}, e, x.get(), max_rows * s.k, 3, 1.0f),
                 "fill");
    DeviceBuffer partials = be.alloc_workspace(
        std::max<size_t>(
            kernels::gemv_partial_floats(s.n, s.k, max_rows, be.device_info().multiprocessors) * 4,
            256),
        "sweep partials");
    DeviceBuffer counters = be.alloc_workspace(kernels::gemv_counters(s.n) * 4, "sweep counters");
    check_cuda(cudaMemsetAsync(counters.get(), 0, counters.size(), be.stream()), "clearing");
    const kernels::GemvScratch scratch{partials.as<float>(), counters.as<int32_t>()};
    for (int64_t rows : {1, 2, 4, 8, 9, 16, 32, 64}) {
      json row = {{"shape", s.name}, {"n", s.n}, {"k", s.k}, {"rows", rows}};
      const double gb = static_cast<double>(wbytes) / 1e9;
      if (kernels::gemv_supported(s.n, s.k, rows)) {
        const double ms = time_ms(
            be.stream(),
            [&](int i) {
              check_launch(kernels::gemv(launch, e, w[i % copies].get(), nullptr, x.get(), rows,
                                         s.n, s.k, y.get(), e, scratch),
                           "gemv");
            },
            5, 40);
        row["gemv_us"] = ms * 1e3;
        row["gemv_gbs"] = gb / (ms * 1e-3);
      }
      // The row GEMV: both variants for one row; several rows (check batches) have one form.
      if (rows <= kernels::kGemvRowsMaxRows) {
        for (int variant = 0; variant < (rows == 1 ? 2 : 1); ++variant) {
          const double ms = time_ms(
              be.stream(),
              [&](int i) {
                const kernels::GemvOutput out{w[i % copies].get(), nullptr, y.get(), e, s.n};
                check_launch(kernels::gemv_row(launch, e, &out, 1, x.get(), rows, s.k, variant),
                             "gemv_row");
              },
              5, 40);
          const std::string v = variant == 0 ? "row" : "row_deep";
          row[v + "_us"] = ms * 1e3;
          row[v + "_gbs"] = gb / (ms * 1e-3);
        }
      }
      const float alpha = 1.0f, beta = 0.0f;
      const double ms = time_ms(
          be.stream(),
          [&](int i) {
            check_cublas(
                cuda::cublas().GemmEx(
                    be.cublas(), CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(s.n),
                    static_cast<int>(rows), static_cast<int>(s.k), &alpha, w[i % copies].get(), t,
                    static_cast<int>(s.k), x.get(), t, static_cast<int>(s.k), &beta, y.get(), t,
                    static_cast<int>(s.n), CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                "cuBLAS");
          },
          5, 40);
      row["cublas_us"] = ms * 1e3;
      row["cublas_gbs"] = gb / (ms * 1e-3);
      out.push_back(row);
    }
  }
  return out;
}

// The prefill attention kernel alone (one sequence, causal), 4 or 8 warps per block.
json attention_sweep(CudaBackend& be, const ModelConfig& c, DType dtype) {
  json out = json::array();
  const kernels::Elem e = cuda::to_elem(dtype);
  const int page = 256;
  for (int64_t T : {2048, 8192}) {
    const int64_t pages = (T + page - 1) / page;
    KvCacheSpec spec{1, c.num_kv_heads, c.head_dim, page, pages, KvCacheType::kF16};
    auto cache = be.create_kv_cache(spec);
    auto& kv = static_cast<cuda::CudaKvCache&>(*cache);
    const int64_t q_cols = c.num_heads * c.head_dim;
    DeviceBuffer q = be.alloc_workspace(static_cast<size_t>(T * q_cols) * 2, "attention q");
    DeviceBuffer o = be.alloc_workspace(static_cast<size_t>(T * q_cols) * 2, "attention out");
    check_launch(kernels::fill_random({be.stream(), false, 0}, e, q.get(), T * q_cols, 5, 1.0f),
                 "fill");
    const kernels::KvLayerView view = kv.layer(0);
    check_launch(kernels::fill_random({be.stream(), false, 0}, e, view.base,
                                      int64_t(spec.bytes() / 2), 6, 1.0f),
                 "fill");
    std::vector<int32_t> meta = {0, static_cast<int32_t>(T), static_cast<int32_t>(T), 0};
    for (int64_t p = 0; p < pages; ++p) meta.push_back(static_cast<int32_t>(p));
    DeviceBuffer m = be.alloc_workspace(meta.size() * 4, "attention meta");
    check_cuda(cudaMemcpy(m.get(), meta.data(), meta.size() * 4, cudaMemcpyHostToDevice), "meta");
    kernels::BatchView b;
    b.seq_q_start = m.as<int32_t>();
    b.seq_kv_len = m.as<int32_t>() + 2;
    b.seq_pages = m.as<int32_t>() + 3;
    b.pages = m.as<int32_t>() + 4;
    b.num_tokens = static_cast<int32_t>(T);
    b.num_seqs = 1;
    const double flops = 4.0 * c.num_heads * c.head_dim * static_cast<double>(T) * (T + 1) / 2.0;
    json row = {{"tokens", T},
                {"heads", c.num_heads},
                {"kv_heads", c.num_kv_heads},
                {"head_dim", c.head_dim}};
    for (const kernels::PrefillBlock block : prefill_blocks()) {
      const double ms = time_ms(
          be.stream(),
          [&](int) {
            check_launch(kernels::attention_prefill({be.stream(), false, 0}, e, q.get(), b, view,
                                                    static_cast<int>(c.num_heads),
                                                    1.0f / std::sqrt(float(c.head_dim)),
                                                    static_cast<int>(T), o.get(), block),
                         "attention_prefill");
          },
          2, 10);
      const std::string name = block_name(block);
      row[name + "_us"] = ms * 1e3;
      row[name + "_tflops"] = flops / (ms * 1e-3) / 1e12;
    }
    out.push_back(row);
  }
  return out;
}

json bench_model(CudaBackend& be, const std::string& name, const BenchOptions& o,
                 const json& limits, std::string& text) {
  ModelConfig config = synthetic_model_config(name);
  const int64_t full_layers = config.num_layers;
  const size_t elem = 2;
  const int64_t max_prefill =
      o.prefill_lengths.empty()
          ? 0
          : *std::max_element(o.prefill_lengths.begin(), o.prefill_lengths.end());
  const int64_t max_batch = o.decode_batches.empty() ? 1
                                                     : *std::max_element(o.decode_batches.begin(),
                                                                         o.decode_batches.end());
  const int64_t page = 256;
  const int64_t seq_pages = (o.decode_context + o.decode_steps + 16 + page - 1) / page;
  const int64_t num_pages = std::max((max_prefill + page - 1) / page, max_batch * seq_pages) + 1;
  const int64_t kv_per_page_layer = 2 * page * config.kv_dim() * static_cast<int64_t>(elem);
  const int64_t max_tokens = std::max<int64_t>(max_prefill, max_batch);
  auto needed = [&](int64_t layers) {
    ModelConfig c = config;
    c.num_layers = layers;
    const ModelNumbers m = model_numbers(c);
    const int64_t weights =
        (m.linear_params + c.vocab_size * c.hidden_size) * static_cast<int64_t>(elem);
    const int64_t acts =
        max_tokens *
            (3 * c.hidden_size + 2 * c.q_dim() + 2 * c.kv_dim() + 2 * c.intermediate_size) *
            static_cast<int64_t>(elem) +
        max_batch * (c.hidden_size + c.vocab_size) * static_cast<int64_t>(elem);
    return weights + acts + num_pages * kv_per_page_layer * layers;
  };
  const size_t free = cuda_free_memory(be.device());
  const double budget = static_cast<double>(free) * o.memory_fraction;
  bool truncated = false;
  if (o.max_layers > 0 && config.num_layers > o.max_layers) {
    config.num_layers = o.max_layers;
    truncated = true;
  }
  while (config.num_layers > 1 && static_cast<double>(needed(config.num_layers)) > budget) {
    --config.num_layers;
    truncated = true;
  }
  json r = {{"model", name},
            {"layers_run", config.num_layers},
            {"layers", full_layers},
            {"truncated", truncated}};
  if (static_cast<double>(needed(config.num_layers)) > budget) {
    r["error"] = "does not fit even with one layer";
    return r;
  }

  const auto t0 = std::chrono::steady_clock::now();
  SyntheticSource weights(config, o.seed, o.dtype);
  LlamaModelOptions mo;
  mo.max_seq_len = std::max<int64_t>(max_prefill, o.decode_context + o.decode_steps + 16);
  mo.max_batch_tokens = max_tokens;
  mo.max_logit_rows = max_batch;
  LlamaModel model(config, be, weights, mo);
  auto cache = be.create_kv_cache(model.kv_cache_spec(num_pages, page));
  r["load_seconds"] = seconds_since(t0);
  const MemoryUsage mem = be.memory_usage();
  r["memory"] = {{"weights", mem.weights},         {"kv_cache", mem.kv_cache},
                 {"activations", mem.activations}, {"workspace", mem.workspace},
                 {"device_free", mem.device_free}, {"device_total", mem.device_total}};

  const ModelNumbers m = model_numbers(config);
  const double copy_gbs = limits["copy_bandwidth"]["gbs"].get<double>();
  const double peak = limits["fp16_dense_tflops_datasheet"].get<double>();
  const double gemm = limits["gemm"]["tflops"].get<double>();

  // ---- prefill ----
  auto prefill_run = [&](int64_t T) {
    const double t = time_prefill(model, be, *cache, T, page);
    const double tflops = prefill_flops(config, T) / t / 1e12;
    json e = {{"tokens", T},
              {"seconds", t},
              {"tokens_per_s", static_cast<double>(T) / t},
              {"tflops", tflops},
              {"share_of_datasheet_peak", peak > 0 ? tflops / peak : 0.0},
              {"share_of_measured_gemm", tflops / gemm},
              {"attention_block", block_name(chosen_block(be))}};
    return e;
  };
  json prefill = json::array();
  if (!o.profile_decode_step) {
    for (int64_t T : o.prefill_lengths) prefill.push_back(prefill_run(T));
  }
  r["prefill"] = prefill;
  if (o.variants && !o.profile_decode_step) {
    const kernels::PrefillBlock chosen = chosen_block(be);
    std::vector<kernels::PrefillBlock> blocks = prefill_blocks();
    blocks.push_back({8, 0, false});
    if (kernels::wgmma_supported()) blocks.push_back({8, 0, true});
    json other = json::array();
    for (const kernels::PrefillBlock block : blocks) {
      if (block_name(block) == block_name(chosen)) continue;
      choose_block(be, block);
      for (int64_t T : o.prefill_lengths) other.push_back(prefill_run(T));
    }
    r["prefill_other_attention_blocks"] = other;
    choose_block(be, chosen);
  }

  // ---- decode ----
  const double weight_bytes =
      static_cast<double>(m.linear_params * static_cast<int64_t>(elem) + m.norm_params * 4);
  auto decode_run = [&](int64_t B) {
    const int warm = kDecodeWarmSteps;
    const double t = time_greedy_decode(model, be, *cache, B, seq_pages, o.decode_context,
                                        o.decode_steps, o.profile_decode_step);
    const double tok_s = static_cast<double>(B * o.decode_steps) / t;
    const double avg_ctx = static_cast<double>(o.decode_context) + warm + o.decode_steps / 2.0;
    const double kv_bytes = static_cast<double>(B) * config.num_layers * 2.0 * config.kv_dim() *
                            static_cast<double>(elem) * avg_ctx;
    const double step_bytes = weight_bytes + kv_bytes;
    const double limit_steps = copy_gbs * 1e9 / step_bytes;
    json e = {{"batch", B},
              {"tokens_per_s", tok_s},
              {"step_ms", 1e3 * t / o.decode_steps},
              {"bytes_per_step", step_bytes},
              {"bandwidth_limit_tokens_per_s", limit_steps * B},
              {"share_of_bandwidth_limit", tok_s / (limit_steps * B)},
              {"achieved_gbs", step_bytes * o.decode_steps / t / 1e9}};
    return e;
  };
  json decode = json::array();
  for (int64_t B : o.profile_decode_step ? std::vector<int64_t>{1} : o.decode_batches) {
    decode.push_back(decode_run(B));
  }
  if (o.profile_decode_step) {
    r["decode"] = decode;
    return r;
  }
  r["decode"] = decode;
  if (o.variants && std::count(o.decode_batches.begin(), o.decode_batches.end(), 1)) {
    json v;
    be.set_cuda_graphs(false);
    v["no_graphs"] = decode_run(1);
    be.set_cuda_graphs(true);
    const bool pdl = be.pdl();
    be.set_pdl(false);
    v["no_pdl"] = decode_run(1);
    be.set_pdl(pdl);
    const int variant = be.row_gemv_variant();
    be.set_row_gemv_variant(1 - variant);
    v["other_row_gemv"] = decode_run(1);
    v["other_row_gemv"]["row_gemv_variant"] = 1 - variant;
    be.set_row_gemv_variant(variant);
    // Every dense linear on the tensor-core GEMV (batch-invariant rows for speculation's checks).
    const int64_t invariant_rows = be.dense_invariant_max_rows();
    be.set_dense_invariant_max_rows(16);
    v["invariant_dense_rows"] = decode_run(1);
    // Batches of up to 16 rows on it: what a speculative check of that many rows would cost.
    json invariant_batches = json::array();
    for (int64_t B : o.decode_batches) {
      if (B > 1 && B <= 16) invariant_batches.push_back(decode_run(B));
    }
    v["invariant_dense_rows_batches"] = invariant_batches;
    be.set_dense_invariant_max_rows(invariant_rows);
    r["decode_batch1_variants"] = v;
  }
  if (truncated) {
    // Layers dominate: scale the step time by the layer count (the head is counted once).
    const double layer_share = static_cast<double>(m.layer_linear * config.num_layers) /
                               static_cast<double>(m.linear_params);
    const double scale =
        layer_share * static_cast<double>(full_layers) / config.num_layers + (1.0 - layer_share);
    r["full_depth_estimate_decode_batch1_tokens_per_s"] =
        decode.empty() ? 0.0 : decode[0]["tokens_per_s"].get<double>() / scale;
  }

  // ---- text ----
  text += "\n== " + name +
          (truncated ? " (first " + std::to_string(config.num_layers) + " of " +
                           std::to_string(full_layers) + " layers)"
                     : "") +
          ", " + std::string(dtype_name(o.dtype)) + ", load " +
          fmt("%.1f s", r["load_seconds"].get<double>()) + "\n";
  text += "prefill  tokens | tokens/s  | TFLOP/s | % datasheet peak | % measured GEMM\n";
  for (const auto& e : prefill) {
    text += fmt("%15.0f", e["tokens"].get<double>()) + " | " +
            fmt("%9.0f", e["tokens_per_s"].get<double>()) + " | " +
            fmt("%7.1f", e["tflops"].get<double>()) + " | " +
            fmt("%15.1f%%", 100 * e["share_of_datasheet_peak"].get<double>()) + " | " +
            fmt("%14.1f%%", 100 * e["share_of_measured_gemm"].get<double>()) + "\n";
  }
  text += "decode   batch  | tokens/s  | ms/step | GB/s achieved | % of bandwidth limit\n";
  for (const auto& e : decode) {
    text += fmt("%15.0f", e["batch"].get<double>()) + " | " +
            fmt("%9.1f", e["tokens_per_s"].get<double>()) + " | " +
            fmt("%7.2f", e["step_ms"].get<double>()) + " | " +
            fmt("%13.0f", e["achieved_gbs"].get<double>()) + " | " +
            fmt("%18.1f%%", 100 * e["share_of_bandwidth_limit"].get<double>()) + "\n";
  }
  if (decode.size() > 1) {
    const double b1 = decode[0]["tokens_per_s"].get<double>();
    const double last = decode.back()["tokens_per_s"].get<double>();
    r["decode_scaling_last_over_first"] = last / b1;
    text += fmt("decode batch %.0f / batch 1: ", decode.back()["batch"].get<double>()) +
            fmt("%.1fx\n", last / b1);
  }
  if (r.contains("prefill_other_attention_blocks")) {
    for (const auto& e : r["prefill_other_attention_blocks"]) {
      text +=
          fmt("prefill %.0f tokens with ", e["tokens"].get<double>()) +
          e["attention_block"].get<std::string>() +
          " attention blocks: " + fmt("%.0f tokens/s", e["tokens_per_s"].get<double>()) +
          fmt(" (%.1f%% of datasheet peak)\n", 100 * e["share_of_datasheet_peak"].get<double>());
    }
  }
  if (r.contains("decode_batch1_variants")) {
    text +=
        "batch-1 decode without CUDA graphs: " +
        fmt("%.1f tokens/s",
            r["decode_batch1_variants"]["no_graphs"]["tokens_per_s"].get<double>()) +
        ", without PDL: " +
        fmt("%.1f tokens/s", r["decode_batch1_variants"]["no_pdl"]["tokens_per_s"].get<double>()) +
        fmt(", row GEMV variant %.0f: ",
            r["decode_batch1_variants"]["other_row_gemv"]["row_gemv_variant"].get<double>()) +
        fmt("%.1f tokens/s",
            r["decode_batch1_variants"]["other_row_gemv"]["tokens_per_s"].get<double>()) +
        fmt(" (%.1f%% of the limit)\n",
            100 * r["decode_batch1_variants"]["other_row_gemv"]["share_of_bandwidth_limit"]
                      .get<double>()) +
        "batch-1 decode with batch-invariant dense rows (dense_invariant_max_rows 16): " +
        fmt("%.1f tokens/s\n",
            r["decode_batch1_variants"]["invariant_dense_rows"]["tokens_per_s"].get<double>());
    for (const auto& e : r["decode_batch1_variants"]["invariant_dense_rows_batches"]) {
      text += fmt("batch %.0f with batch-invariant dense rows: ", e["batch"].get<double>()) +
              fmt("%.2f ms/step\n", e["step_ms"].get<double>());
    }
  }
  if (r.contains("full_depth_estimate_decode_batch1_tokens_per_s")) {
    text += fmt("estimated full-depth batch-1 decode: %.1f tokens/s\n",
                r["full_depth_estimate_decode_batch1_tokens_per_s"].get<double>());
  }
  return r;
}

}  // namespace

BenchReport run_backend_benchmark(const BenchOptions& o) {
  for (const auto& name : o.models) synthetic_model_config(name);  // unknown names fail early
  CudaBackendOptions bo;
  bo.device = o.device;
  bo.activation_dtype = o.dtype;
  auto backend = create_cuda_backend(bo);
  auto& be = static_cast<CudaBackend&>(*backend);
  const CudaDeviceInfo& info = be.device_info();

  BenchReport report;
  json& j = report.json;
  j["device"] = {{"name", info.name},
                 {"compute_capability",
                  std::to_string(info.compute_major) + "." + std::to_string(info.compute_minor)},
                 {"multiprocessors", info.multiprocessors},
                 {"memory_bytes", info.total_bytes},
                 {"nominal_bandwidth_gbs", info.memory_bandwidth_gbs}};
  json limits;
  limits["copy_bandwidth"] = copy_bandwidth(be);
  limits["gemm"] = gemm_peak(be, o.dtype);
  limits["fp16_dense_tflops_datasheet"] = datasheet_fp16_tflops(info.name);
  j["limits"] = limits;
  j["options"] = {{"dtype", std::string(dtype_name(o.dtype))},
                  {"decode_context", o.decode_context},
                  {"decode_steps", o.decode_steps},
                  {"pdl", be.pdl()}};

  std::string& text = report.text;
  text += "device: " + info.name + " (cc " + std::to_string(info.compute_major) + "." +
          std::to_string(info.compute_minor) + ", " + std::to_string(info.multiprocessors) +
          " SMs, " + fmt("%.0f GiB", static_cast<double>(info.total_bytes) / (1 << 30)) + ")\n";
  text += "copy bandwidth (device to device, read + write): " +
          fmt("%.0f GB/s", limits["copy_bandwidth"]["gbs"].get<double>()) + " (nominal " +
          fmt("%.0f GB/s)\n", info.memory_bandwidth_gbs);
  text += "cuBLAS GEMM 8192^3 " + std::string(dtype_name(o.dtype)) + ": " +
          fmt("%.0f TFLOP/s", limits["gemm"]["tflops"].get<double>()) + " (datasheet dense peak " +
          fmt("%.0f TFLOP/s)\n", limits["fp16_dense_tflops_datasheet"].get<double>());
  text += "decode: " + std::to_string(o.decode_context) + " cached positions per sequence, " +
          std::to_string(o.decode_steps) + " timed steps, greedy sampling on the GPU\n";

  if (o.kernel_sweep && !o.models.empty() && !o.profile_decode_step) {
    j["kernel_sweep"] = kernel_sweep(be, synthetic_model_config(o.models.front()), o.dtype);
    j["attention_sweep"] = attention_sweep(be, synthetic_model_config(o.models.front()), o.dtype);
    text += "\nprefill attention kernel (one layer, causal):\n";
    for (const auto& e : j["attention_sweep"]) {
      text += fmt("  %5.0f tokens:", e["tokens"].get<double>());
      for (const kernels::PrefillBlock block : prefill_blocks()) {
        const std::string name = block_name(block);
        text += " " + name + fmt(" %.1f us", e[name + "_us"].get<double>()) +
                fmt(" (%.0f TFLOP/s)", e[name + "_tflops"].get<double>());
      }
      text += "\n";
    }
    text += "\nGEMV sweep (" + o.models.front() + " shapes; GB/s of weights read):\n";
    text +=
        "shape    rows | MMA GEMV us GB/s | row GEMV us GB/s | row deep us GB/s | cuBLAS us  "
        "GB/s\n";
    for (const auto& e : j["kernel_sweep"]) {
      std::string shape = e["shape"].get<std::string>();
      shape.resize(std::max<size_t>(shape.size(), 8), ' ');
      std::string line = shape + fmt("%4.0f | ", e["rows"].get<double>());
      line += e.contains("gemv_us") ? fmt("%7.1f ", e["gemv_us"].get<double>()) +
                                          fmt("%5.0f | ", e["gemv_gbs"].get<double>())
                                    : std::string("      -     - | ");
      for (const char* v : {"row", "row_deep"}) {
        const std::string us = std::string(v) + "_us", gbs = std::string(v) + "_gbs";
        line += e.contains(us)
                    ? fmt("%10.1f ", e[us].get<double>()) + fmt("%5.0f | ", e[gbs].get<double>())
                    : std::string("         -     - | ");
      }
      line += fmt("%9.1f ", e["cublas_us"].get<double>()) +
              fmt("%5.0f\n", e["cublas_gbs"].get<double>());
      text += line;
    }
  }

  j["models"] = json::array();
  for (const auto& name : o.models) {
    if (o.profile_decode_step && name != o.models.front()) break;
    try {
      j["models"].push_back(bench_model(be, name, o, limits, text));
    } catch (const Error& e) {
      j["models"].push_back({{"model", name}, {"error", e.what()}});
      text += "\n== " + name + ": " + e.what() + "\n";
      if (e.code() == ErrorCode::kBackend) break;  // the device is in an unknown state
    }
  }
  return report;
}

}  // namespace hearth
