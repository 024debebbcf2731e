// Turns CUDA and cuBLAS status codes into hearth::Error: out-of-memory as kOutOfMemory, every
// other failure as kBackend, with what was being done and the runtime's own description.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <string>

namespace hearth::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t status, const std::string& what);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const std::string& what);

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess) throw_cuda_error(status, what);
}

inline void check_cublas(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, what);
}

// A kernel launch: its own status, and any error left by an earlier asynchronous failure.
inline void check_launch(cudaError_t status, const char* kernel) {
  if (status == cudaSuccess) status = cudaGetLastError();
  if (status != cudaSuccess) throw_cuda_error(status, std::string("launching ") + kernel);
}

// Makes `device` current for the lifetime of the guard (restores the previous one).
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  int device_ = 0;
};

}  // namespace hearth::cuda
