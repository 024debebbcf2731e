// Tensor parallelism: one Backend over several GPUs of one machine, each running every layer on
// its share of the heads and MLP features (tensor_parallel_split.h) with its part of the weights
// and KV cache. q/k/v and gate/up are column parallel, o and down row parallel, and an NCCL
// all-reduce sums the devices' o and down outputs; everything else (embedding, norms, residual
// stream, head) is replicated, so every device holds the same activations between layers.
// Logits are read and sampled on the first device. Decode steps are captured as one CUDA graph
// per device, NCCL calls included.
#pragma once

#include <memory>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/tensor_parallel_split.h"

namespace hearth {

// `devices`: two or more distinct GPUs; `options.device` is ignored. Throws Error(kUnsupported)
// when Hearth was built without NCCL or the model cannot be divided (tensor_parallel_split()),
// Error(kBackend) when NCCL cannot be loaded or started.
std::unique_ptr<Backend> create_tensor_parallel_backend(const std::vector<int>& devices,
                                                        const TensorParallelShape& shape,
                                                        const CudaBackendOptions& options = {});

// Microseconds per all-reduce of a rows × cols activation across the GPUs of a backend from
// create_tensor_parallel_backend() (mean of `reps` back to back, after a warm-up), for the
// benchmark: the way the backend chooses for that size, or NCCL's with `nccl`. Throws
// Error(kInvalidArgument) for another kind of backend.
double tensor_parallel_all_reduce_us(Backend& backend, int64_t rows, int64_t cols, int reps = 200,
                                     bool nccl = false);

}  // namespace hearth
