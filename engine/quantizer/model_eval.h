// Perplexity and KL divergence of a model on a text, for hearth-cli ppl / kld and the
// quantizer's evaluation stage. Both use the standard sliding-window method: windows of `ctx`
// tokens advanced by `stride`; the first window scores all its positions, later windows only
// the positions no earlier window scored (each scored with at least ctx − stride tokens of
// context).
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "engine/api/engine.h"  // DeviceKind
#include "engine/core/cancel.h"

namespace hearth {

struct EvalOptions {
  DeviceKind device = DeviceKind::kCpu;
  int cuda_device = 0;
  int cpu_threads = 0;
  int64_t ctx = 2048;      // window length; capped at the model's trained context
  int64_t stride = 0;      // 0: ctx / 2
  int64_t max_tokens = 0;  // 0: the whole text
  bool add_bos = true;     // the model's BOS token before the text, when it has one
  // LoRA adapters applied to the evaluated model (not to a KL reference).
  std::vector<AdapterSpec> adapters;
  KvCacheType kv_cache_type = KvCacheType::kF16;  // of the evaluated model (not a KL reference)
  CpuLinears cpu_linears = CpuLinears::kExact;    // on the CPU: exact values, or the fast path
};

// Called after each window: (positions scored so far, positions to score).
using EvalProgress = std::function<void(int64_t done, int64_t total)>;

struct PerplexityResult {
  int64_t tokens = 0;  // positions scored
  int64_t windows = 0;
  double nll = 0;  // mean negative log-likelihood, nats
  double perplexity = 0;
};

// Throws Error (kInvalidArgument when the text has fewer than 2 tokens or ctx < 2).
PerplexityResult evaluate_perplexity(const std::filesystem::path& model, const std::string& text,
                                     const EvalOptions& options, const EvalProgress& progress = {},
                                     const CancelToken& cancel = {});

struct KlResult {
  int64_t tokens = 0;
  double kl_mean = 0;  // mean KL(reference || model), nats
  double kl_p999 = 0;  // 99.9th percentile of the per-position KL
  double kl_max = 0;
  double top1_agreement = 0;  // share of positions with the same argmax
  double perplexity_model = 0;
  double perplexity_reference = 0;
};

// Runs both models over the same windows (the reference first, its log-probabilities kept in
// host memory per window). Throws Error(kInvalidArgument) when the vocabularies differ.
KlResult evaluate_kl_divergence(const std::filesystem::path& model,
                                const std::filesystem::path& reference, const std::string& text,
                                const EvalOptions& options, const EvalProgress& progress = {},
                                const CancelToken& cancel = {});

// The built-in held-out evaluation text (resources/calibration/heldout), never part of the
// calibration set. Error(kIo) when the resources cannot be found.
std::string builtin_eval_text();

}  // namespace hearth
