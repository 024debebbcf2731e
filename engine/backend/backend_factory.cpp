#include "engine/backend/backend_factory.h"

#include <fstream>
#include <thread>

#include "engine/backend/cpu/cpu_backend.h"
#include "engine/core/error.h"
#if HEARTH_WITH_CUDA
#include "engine/backend/cuda/cuda_backend.h"
#include "engine/backend/cuda/cuda_quant_linear.h"
#endif

namespace hearth {

bool cuda_available() {
#if HEARTH_WITH_CUDA
  return cuda_device_count() > 0;
#else
  return false;
#endif
}

namespace {

[[noreturn]] void no_cuda() {
#if HEARTH_WITH_CUDA
  fail(ErrorCode::kUnsupported, "no CUDA GPU is available on this machine (or its driver is "
                                "missing); load the model on the CPU instead");
#else
  fail(ErrorCode::kUnsupported, "this build of Hearth has no CUDA backend; load the model on "
                                "the CPU instead");
#endif
}

}  // namespace

DeviceMemoryInfo query_device_memory(DeviceKind kind, int device) {
  DeviceMemoryInfo info;
  if (kind == DeviceKind::kCuda) {
#if HEARTH_WITH_CUDA
    if (cuda_device_count() == 0) no_cuda();
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

std::unique_ptr<Backend> create_backend(DeviceKind kind, int device, int cpu_threads) {
  if (kind == DeviceKind::kCuda) {
#if HEARTH_WITH_CUDA
    if (cuda_device_count() == 0) no_cuda();
    CudaBackendOptions options;
    options.device = device;
    return create_cuda_backend(options);
#else
    no_cuda();
#endif
  }
  return create_cpu_backend(cpu_threads);
}

}  // namespace hearth
