// The quantized-model benchmark (CUDA): synthetic EXL2 and GPTQ models of real shapes
// (engine/bench/synthetic_quant_source.h) through the engine's own forward pass on the CUDA
// backend, next to the device's measured bandwidth. Driven by tests/gpu/quant_bench_main.cpp
// (the quant_bench program); `hearth-cli bench` can call it the same way.
//
// For each model and quantization: decode tokens/s at the given batch sizes with the share of
// the bandwidth limit (bytes of quantized weights, norms and KV cache read per step ÷ the
// device-to-device copy bandwidth measured in the same run, and ÷ the nominal bandwidth);
// prefill tokens/s. Optionally a kernel sweep: the fused quantized GEMM alone on each weight
// shape, in GB/s of weights read.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/bench/synthetic_quant_source.h"

namespace hearth {

struct QuantBenchOptions {
  std::vector<std::string> models = {"llama3-8b"};  // synthetic_model_names()
  // "exl2:<bpw>" or "gptq:<bits>:<group size>[:noact][:asym]".
  std::vector<std::string> quants = {"exl2:4.0", "gptq:4:128"};
  int device = 0;
  std::vector<int64_t> prefill_lengths = {512, 2048};
  std::vector<int64_t> decode_batches = {1, 8, 32};
  // Speculative checks of one sequence: a step of k tokens (the last one and k - 1 proposals)
  // for each k here, against a one-token step.
  std::vector<int64_t> check_tokens = {};
  // LoRA: decode again with adapters of this rank on all seven projections of every layer, one
  // adapter for every sequence and then `lora_adapters` different ones spread over the batch;
  // 0: off.
  int64_t lora_rank = 0;
  int lora_adapters = 4;
  // The LoRA paths measured: "fused" (folded into the quantized linears), "kernels" (Hearth's
  // separate LoRA kernels), "cublas" (more than one row).
  std::vector<std::string> lora_paths = {"fused", "kernels", "cublas"};
  // Prefill again (and the prefix step) with the dequantized weights of many-row linears written
  // in slices of each of these sizes (MiB; CudaBackendOptions::dequant_slice_bytes).
  std::vector<int64_t> dequant_slice_mib = {};
  // {sequences, new tokens, cached positions}: also time the step in which that many prompts
  // continue one cached prefix (bench::time_prefix_step; cached rounded down to whole pages);
  // empty: off.
  std::vector<int64_t> prefix_step = {};
  int64_t decode_context = 512;
  KvCacheType kv_cache_type = KvCacheType::kF16;  // the cache every step reads and writes
  int decode_steps = 32;
  bool kernel_sweep = true;  // on the first model's shapes, for every quantization
  // The first timed decode step of each batch size runs between cudaProfilerStart and
  // cudaProfilerStop (for `ncu --profile-from-start off`: one step's kernels, nothing else);
  // with check_tokens, the first check step of the largest count instead.
  bool profile_decode_step = false;
  // CudaBackendOptions::fold_norm_max_rows; negative: the backend's default.
  int64_t fold_norm_max_rows = -1;
  // CudaBackendOptions::slice_sum_kernel_min_rows; negative: the backend's default.
  int64_t slice_sum_kernel_min_rows = -1;
  // CudaBackendOptions::lora_delta_max_rows; negative: the backend's default.
  int64_t lora_delta_max_rows = -1;
  // CudaBackendOptions::staged_x_min_rows; negative: the backend's default.
  int64_t staged_x_min_rows = -1;
  // CudaBackendOptions::quant_fused_max_rows; negative: the backend's default.
  int64_t quant_fused_max_rows = -1;
  // CudaBackendOptions::quant_mma_min_rows; negative: the backend's default.
  int64_t quant_mma_min_rows = -1;
  // CudaBackendOptions::quant_mma_max_rows; negative: the backend's default.
  int64_t quant_mma_max_rows = -1;
  // The product's blocks: "tall", "wide" (CudaBackendOptions::quant_mma_wide_blocks), "wgmma"
  // (quant_mma_wgmma); empty: the backend's default.
  std::string quant_mma_blocks;
  // CudaBackendOptions::decode_attention_blocks_per_sm; negative: the backend's default.
  int decode_attention_blocks_per_sm = -1;
  // CudaBackendOptions::decode_attention_tensor_cores (0 or 1); negative: the backend's default.
  int decode_attention_tensor_cores = -1;
  // CudaBackendOptions::attention_warps and attention_warp_tiles; 0: the backend's default
  // (tiles chosen per launch).
  int attention_warps = 0;
  int attention_warp_tiles = 0;
  // CudaBackendOptions::attention_warpgroup_mma: 0 off, 1 on (where supported); -1 the default
  int attention_warpgroup_mma = -1;
  // CudaBackendOptions::dequant_overlap: 0 off, 1 on; -1 the default.
  int dequant_overlap = -1;
  // CudaBackendOptions::cuda_graphs: 0 decode steps run eagerly (so large batches may write
  // their fp16 weight slices beside cuBLAS, which a captured graph cannot), 1 captured; -1 the
  // default.
  int cuda_graphs = -1;
  uint64_t seed = 1;
  double memory_fraction = 0.9;  // models beyond this share of free memory run fewer layers
};

// A synthetic quantization by name: "exl2:<bpw>" or "gptq:<bits>:<group size>[:noact][:asym]".
struct QuantSpec {
  std::string label;
  SyntheticQuantSource::Options options;
};
// Throws Error(kInvalidArgument) for another form.
QuantSpec parse_quant(const std::string& s);

struct QuantBenchReport {
  nlohmann::json json;
  std::string text;
};

// Throws Error(kBackend) without a usable GPU, Error(kInvalidArgument) for unknown names.
QuantBenchReport run_quant_benchmark(const QuantBenchOptions& options);

}  // namespace hearth
