// The quantizer's dense linear algebra on the GPU (cuBLAS / cuSOLVER), with the same contracts
// as the CPU reference in hessian.h / cholesky.h (which tests/gpu checks it against). Built only
// with CUDA (HEARTH_WITH_CUDA); elsewhere cuda_quant_math_available() is false.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/quant/quantizer/gptq_solver.h"

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

  // GPTQ with gptq_quantize's contract (gptq_solver.h) on the device: group parameters from
  // column maxima / minima and the EXL2 grid errors computed there (the small per-group choices
  // on the host with the CPU's code), rows quantized by a kernel that matches the CPU bit for
  // bit on equal inputs, block-local rank-1 updates, and the trailing update as one cublasSgemm
  // per block. Deterministic for a given device and shape.
  GptqResult gptq(std::vector<float>& w, int64_t k, int64_t n, const std::vector<float>& hinv_upper,
                  const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                  int64_t block = 128);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace hearth::quantizer
