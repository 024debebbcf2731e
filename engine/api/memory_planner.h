// Estimates, before anything is allocated, the memory a load will take on its device.
#pragma once

#include "engine/api/engine.h"
#include "engine/model/lora_adapter.h"

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

// What an adapter takes on its device: its A and B in `dtype` and, where the linears it adapts are
// packed quantized matrices on a GPU (EXL2, GPTQ, GGUF), a second copy of each A in its matrix's
// stored row order (inputs rounded up to whole 32-row chunks), made for the batch-1 steps that
// fold the adapter into the quantized kernel (CudaBackend::fuse_lora).
size_t adapter_device_bytes(const LoraAdapter& lora, DType dtype, bool packed_quantized_base);
// Whether a load's linears are packed quantized matrices on a GPU: EXL2 and GPTQ there, and GGUF
// whose layers take less than their linears would in fp16 (small ones are expanded at load).
bool packed_quantized_base(const LoadOptions& options, const ModelInfo& info);

std::string format_bytes(size_t bytes);  // "1.25 GiB", "300 MiB"

}  // namespace hearth
