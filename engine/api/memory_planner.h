// Estimates, before anything is allocated, the memory a load will take on its device.
#pragma once

#include "engine/api/engine.h"

namespace hearth {

// Decode rows a speculating step may hold (GeneratorOptions' SpeculationOptions::max_step_rows):
// with more sequences than this decoding, speculation stops (their rows are no longer free).
inline constexpr int kSpeculationStepRows = 16;

// The settings a load resolves to once the model's config is known.
struct ResolvedLoad {
  int64_t max_seq_len = 0;
  int64_t cache_tokens = 0;
  int64_t page_size =
      64;  // measured: no slower than 256 in decode, and reuse shares more (PERFORMANCE.md)
  int64_t num_pages = 0;
  int64_t max_batch_tokens = 512;
  int64_t max_logit_rows = 8;
  int max_batch = 8;
};

ResolvedLoad resolve_load(const LoadOptions& options, const ModelInfo& info);
// Fills everything but device_free / device_total / fits / advice.
MemoryPlan estimate_memory(const LoadOptions& options, const ModelInfo& info,
                           const ResolvedLoad& resolved);
// Compares with the device's free memory and writes the advice when it does not fit.
void judge_plan(MemoryPlan& plan, const LoadOptions& options, const ResolvedLoad& resolved);

std::string format_bytes(size_t bytes);  // "1.25 GiB", "300 MiB"

}  // namespace hearth
