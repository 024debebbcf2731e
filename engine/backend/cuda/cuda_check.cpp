#include "engine/backend/cuda/cuda_check.h"

#include "engine/backend/cuda/cublas_api.h"
#include "engine/core/error.h"

namespace hearth::cuda {

void throw_cuda_error(cudaError_t status, const std::string& what) {
  // Clear the error the runtime keeps for the next call (sticky errors stay regardless).
  cudaGetLastError();
  const std::string message = "CUDA error while " + what + ": " + cudaGetErrorName(status) + " (" +
                              cudaGetErrorString(status) + ")";
  fail(status == cudaErrorMemoryAllocation ? ErrorCode::kOutOfMemory : ErrorCode::kBackend,
       message);
}

void throw_cublas_error(cublasStatus_t status, const std::string& what) {
  const std::string message = "cuBLAS error while " + what + ": " +
                              cuda::cublas().GetStatusName(status) + " (" +
                              cuda::cublas().GetStatusString(status) + ")";
  fail(status == CUBLAS_STATUS_ALLOC_FAILED ? ErrorCode::kOutOfMemory : ErrorCode::kBackend,
       message);
}

DeviceGuard::DeviceGuard(int device) : device_(device) {
  cudaGetDevice(&previous_);
  if (previous_ != device_) check_cuda(cudaSetDevice(device_), "selecting the device");
}

DeviceGuard::~DeviceGuard() {
  if (previous_ >= 0 && previous_ != device_) cudaSetDevice(previous_);
}

}  // namespace hearth::cuda
