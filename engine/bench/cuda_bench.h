// The GPU benchmark: synthetic models of real shapes (random weights made in memory) run
// through the engine's own forward pass on the CUDA backend, next to the device's measured
// limits. Used by tests/bench (backend_bench) and `hearth-cli bench`.
//
// For each model: prefill tokens/s at the given lengths and their share of the dense fp16 tensor
// peak; decode tokens/s at the given batch sizes; for batch 1 the share of the memory-bandwidth
// limit (bytes of weights and KV read per token ÷ the device-to-device copy bandwidth measured
// in the same run). Optionally a kernel sweep: the decode GEMV against cuBLAS per weight shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/core/dtype.h"

namespace hearth {

struct BenchOptions {
  std::vector<std::string> models = {"llama3-8b"};  // synthetic_model_names()
  int device = 0;
  DType dtype = DType::kF16;  // kF16 or kBF16
  std::vector<int64_t> prefill_lengths = {512, 2048, 8192};
  std::vector<int64_t> decode_batches = {1, 8, 32, 64};
  int64_t decode_context = 512;  // cached positions per sequence before the timed decode steps
  int decode_steps = 32;         // timed steps per batch size
  bool kernel_sweep = true;      // GEMV vs cuBLAS on the first model's weight shapes
  bool variants = true;          // batch-1 decode also without CUDA graphs / without PDL
  uint64_t seed = 1;
  // Models whose weights and cache exceed this share of free memory run with fewer layers
  // (reported as such, with an estimate for the full depth).
  double memory_fraction = 0.9;
  int max_layers = 0;  // > 0: run at most this many layers (and estimate the full depth)
  // Only load the first model and run batch-1 decode steps, with the CUDA profiler started for
  // one step after the warm-up (for `ncu --profile-from-start off`).
  bool profile_decode_step = false;
};

struct BenchReport {
  nlohmann::json json;  // every number
  std::string text;     // the same as tables
};

// Throws Error(kBackend) without a usable GPU, Error(kInvalidArgument) for unknown models.
BenchReport run_backend_benchmark(const BenchOptions& options);

}  // namespace hearth
