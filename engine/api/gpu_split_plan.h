// Placing a CUDA load on its GPUs: with one GPU everything goes there; with several, consecutive
// layers (and their KV cache) go to each, in proportion to what each has free or as
// LoadOptions::gpu_split_gib allots, the embedding to the first and the head to the last.
#pragma once

#include <vector>

#include "engine/api/engine.h"
#include "engine/api/memory_planner.h"

namespace hearth {

// Throws Error(kInvalidArgument) for a GPU list or split the load cannot use, Error(kUnsupported)
// for tensor parallelism with a draft model or adapters (not built yet): a device named
// twice or out of range, gpu_split_gib of another length than the GPUs
// or with a value that is not a positive number of GiB.
void check_gpu_options(const LoadOptions& options, int device_count);
// The GPUs a CUDA load uses, in layer order (LoadOptions::gpus, else cuda_device).
std::vector<int> load_gpus(const LoadOptions& options);

// plan holds the model's totals as estimate_memory() gives them (one GPU's activations and
// workspace, adapters set); `draft`, when not null, the draft model's, placed on the last GPU.
// Fills plan.gpus for `devices` (the load_gpus() in order, with their memory now; a GPU that
// gpu_split_gib leaves without a layer is left out), replaces the totals with the shares' sums
// (every GPU keeps its own activations and workspace) and judges each GPU: plan.fits and, when
// one does not fit, plan.advice naming it. For several GPUs (judge_plan() judges one).
void place_on_gpus(MemoryPlan& plan, const LoadOptions& options, const ModelInfo& info,
                   const ResolvedLoad& resolved, const MemoryPlan* draft,
                   const std::vector<DeviceMemoryInfo>& devices, const std::vector<int>& gpus);

// Tensor parallelism: every GPU holds its share (tensor_parallel_split()) of every layer's
// weights and KV cache, the embedding and head whole, and activations and workspace of its own;
// gpu_split_gib, when given, caps each GPU. Fills plan.gpus and the totals as place_on_gpus()
// does. Throws Error(kUnsupported) when the model cannot be divided over the GPUs.
void place_tensor_parallel(MemoryPlan& plan, const LoadOptions& options, const ModelInfo& info,
                           const ResolvedLoad& resolved,
                           const std::vector<DeviceMemoryInfo>& devices,
                           const std::vector<int>& gpus);

}  // namespace hearth
