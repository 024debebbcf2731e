// Gathers what backend/cuda_status.h judges. The driver is asked through the CUDA runtime,
// which Hearth links statically and which loads libcuda itself, so every question here is safe
// to ask on a machine without a driver. cuBLAS is loaded only when a usable GPU exists.
#include <cuda_runtime_api.h>

#include "engine/backend/cuda/cublas_api.h"
#include "engine/backend/cuda/cuda_backend.h"

namespace hearth {

CudaProbe probe_cuda() {
  CudaProbe p;
  p.built_with_cuda = true;
  p.runtime_version = CUDART_VERSION;
  if (cudaDriverGetVersion(&p.driver_version) != cudaSuccess) p.driver_version = 0;
  if (p.driver_version == 0 || p.driver_version / 1000 < p.runtime_version / 1000) return p;
  const cudaError_t counted = cudaGetDeviceCount(&p.device_count);
  if (counted != cudaSuccess) {
    p.device_error = std::string(cudaGetErrorName(counted)) + ", " + cudaGetErrorString(counted);
    p.device_count = 0;
    cudaGetLastError();
    return p;
  }
  for (int d = 0; d < p.device_count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) {
      cudaGetLastError();
      continue;
    }
    if (prop.major * 10 + prop.minor > p.best_compute_major * 10 + p.best_compute_minor) {
      p.best_compute_major = prop.major;
      p.best_compute_minor = prop.minor;
      p.best_device_name = prop.name;
    }
  }
  if (p.best_compute_major < 8) return p;
  p.cublas_error = cuda::cublas_load_error();
  p.cublas_path = cuda::cublas_path();
  return p;
}

}  // namespace hearth
