// The kinds of device a model runs on and, for each, what a load plan asks before anything is
// allocated (is it there, how much memory it has, how much scratch its backend takes) and the
// backend itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/backend/backend.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/backend/cuda_status.h"
#include "engine/backend/tensor_parallel_split.h"

namespace hearth {

enum class DeviceKind { kCpu, kCuda };

struct DeviceMemoryInfo {
  std::string name;
  size_t free_bytes = 0;
  size_t total_bytes = 0;
};

// The sizes a backend's scratch buffers depend on, known once the model and load are resolved.
struct WorkspaceShape {
  int64_t max_batch_tokens = 0;
  int64_t max_logit_rows = 0;
  int64_t vocab = 0;
  int64_t num_heads = 0;
  int64_t head_dim = 0;
  int64_t max_out_features = 0;  // the widest linear's output
  int64_t max_in_features = 0;   // the widest quantized linear's input
  bool quantized_linears = false;
};

// Whether CUDA can run models here and, if not, why; probed once per process. Never throws.
const CudaStatus& cuda_status();
bool cuda_available();  // cuda_status().available
DeviceMemoryInfo query_device_memory(DeviceKind kind, int device);
// What the backend of `kind` allocates besides weights, KV cache and activations, for load plans.
size_t backend_workspace_bytes(DeviceKind kind, const WorkspaceShape& shape);
// Devices of `kind` a backend can run on (the CPU is one; 0 GPUs without a usable driver).
int device_count(DeviceKind kind);
// `cpu_linears`: how a CPU backend multiplies quantized linears (engine/backend/cpu/cpu_backend.h).
std::unique_ptr<Backend> create_backend(DeviceKind kind, int device, int cpu_threads,
                                        CpuLinears cpu_linears = CpuLinears::kExact);

// One backend over several GPUs by tensor parallelism (engine/backend/cuda/cuda_tensor_parallel.h).
// Throws Error(kUnsupported) in a build without CUDA or NCCL.
std::unique_ptr<Backend> create_tensor_parallel(const std::vector<int>& gpus,
                                                const TensorParallelShape& shape);

}  // namespace hearth
