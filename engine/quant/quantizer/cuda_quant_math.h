// The quantizer's dense linear algebra on the GPU (cuBLAS / cuSOLVER), with the same contracts
// as the CPU reference in hessian.h / cholesky.h (which tests/gpu checks it against). Built only
// with CUDA (HEARTH_WITH_CUDA); elsewhere cuda_quant_math_available() is false.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace hearth::quantizer {

bool cuda_quant_math_available();

class CudaQuantMath {
 public:
  // Throws Error(kBackend) when the device cannot be used.
  explicit CudaQuantMath(int device);
  ~CudaQuantMath();
  CudaQuantMath(const CudaQuantMath&) = delete;
  CudaQuantMath& operator=(const CudaQuantMath&) = delete;

  // XᵀX of x [rows, k] (row-major, host) as a full symmetric k×k matrix (cublasSsyrk, fp32).
  std::vector<float> gram(const float* x, int64_t rows, int64_t k);

  // As inverse_upper_cholesky (cholesky.h): U upper with h⁻¹ = UᵀU, via cusolverDnSpotrf of
  // J·h·J and a triangular solve (cublasStrsm). False when h is not positive definite.
  bool inverse_upper_cholesky(const std::vector<float>& h, int64_t n, std::vector<float>& u);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::quantizer
