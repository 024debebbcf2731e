#include "engine/backend/backend_factory.h"

#include <fstream>
#include <thread>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#if HEARTH_WITH_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_quant_linear.h"
#include "engine/backend/cuda/cuda_tensor_parallel.h"
#endif

namespace hearth {

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
#if HEARTH_WITH_CUDA
    return describe_cuda_probe(probe_cuda());
#else
    return describe_cuda_probe(CudaProbe{});
#endif
  }();
  return status;
}

bool cuda_available() {
  return cuda_status().available;
}

namespace {

[[noreturn]] void no_cuda() {
  fail(ErrorCode::kUnsupported,
       "the GPU cannot be used: " + cuda_status().summary + " Load the model on the CPU instead.");
}

}  // namespace

DeviceMemoryInfo query_device_memory(DeviceKind kind, int device) {
  DeviceMemoryInfo info;
  if (kind == DeviceKind::kCuda) {
#if HEARTH_WITH_CUDA
    if (!cuda_available()) no_cuda();
    const CudaDeviceInfo cuda = cuda_device_info(device);
    info.name = "cuda:" + std::to_string(device) + " " + cuda.name;
    info.free_bytes = cuda.free_bytes;
    info.total_bytes = cuda.total_bytes;
    return info;
#else
    no_cuda();
#endif
  }
  info.name = "CPU (" + std::to_string(std::thread::hardware_concurrency()) + " threads)";
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  size_t kb;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") info.total_bytes = kb * 1024;
    if (key == "MemAvailable:") info.free_bytes = kb * 1024;
  }
  return info;
}

size_t backend_workspace_bytes(DeviceKind kind, const WorkspaceShape& shape) {
#if HEARTH_WITH_CUDA
  if (kind == DeviceKind::kCuda) {
    size_t bytes = cuda_workspace_bytes(shape.max_batch_tokens, shape.max_logit_rows, shape.vocab,
                                        shape.num_heads, shape.head_dim, shape.max_out_features) +
                   (size_t{64} << 20);  // CUDA context structures, graphs
    if (shape.quantized_linears) {
      bytes +=
          cuda::quant_large_batch_workspace_bytes(shape.max_batch_tokens, shape.max_in_features);
    }
    return bytes;
  }
#endif
  return size_t{16} << 20;
}

int device_count(DeviceKind kind) {
  if (kind == DeviceKind::kCpu) return 1;
#if HEARTH_WITH_CUDA
  return cuda_available() ? cuda_device_count() : 0;
#else
  return 0;
#endif
}

std::unique_ptr<Backend> create_backend(DeviceKind kind, int device, int cpu_threads,
                                        CpuLinears cpu_linears) {
  if (kind == DeviceKind::kCuda) {
#if HEARTH_WITH_CUDA
    if (!cuda_available()) no_cuda();
    CudaBackendOptions options;
    options.device = device;
    return create_cuda_backend(options);
#else
    no_cuda();
#endif
  }
  return create_cpu_backend(cpu_threads, cpu_linears);
}

std::unique_ptr<Backend> create_tensor_parallel(const std::vector<int>& gpus,
                                                const TensorParallelShape& shape) {
#if HEARTH_WITH_CUDA
  if (!cuda_available()) no_cuda();
  return create_tensor_parallel_backend(gpus, shape);
#else
  (void)gpus, (void)shape;
  no_cuda();
#endif
}

}  // namespace hearth
