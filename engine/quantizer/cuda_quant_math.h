// The quantizer's dense linear algebra on the GPU (cuBLAS and Hearth's kernels), with the same
// contracts as the CPU reference in hessian.h / cholesky.h (which tests/gpu checks it against).
// Built only with CUDA (HEARTH_WITH_CUDA); elsewhere cuda_quant_math_available() is false.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/quantizer/gptq_solver.h"
#include "engine/quantizer/hessian.h"
#include "engine/quantizer/linear_quantizer.h"
#include "engine/quantizer/phase_times.h"

namespace hearth::quantizer {

bool cuda_quant_math_available();

class CudaQuantMath {
 public:
  // Throws Error(kBackend) when the device cannot be used.
  explicit CudaQuantMath(int device);
  ~CudaQuantMath();
  CudaQuantMath(const CudaQuantMath&) = delete;
  CudaQuantMath& operator=(const CudaQuantMath&) = delete;

  // XᵀX summed over batches on the device by HessianAccumulator::add's rule (each batch in
  // float, by cublasSsyrk; the total in double) and finished there, so that a module's Hessian
  // crosses to the host once, as float, instead of once per calibration row.
  class GramSum {
   public:
    ~GramSum();
    GramSum(const GramSum&) = delete;
    GramSum& operator=(const GramSum&) = delete;
    int64_t k() const { return k_; }
    // Adds the rows x [rows, k] (host, row-major).
    void add(const float* x, int64_t rows);
    int64_t tokens() const { return tokens_; }
    // HessianAccumulator::finish's result for the rows added so far (2·XᵀX / tokens, full
    // symmetric float; the identity without rows), formed on the device.
    std::vector<float> finish() const;

   private:
    friend class CudaQuantMath;
    GramSum(CudaQuantMath& math, int64_t k);
    CudaQuantMath& math_;
    int64_t k_;
    int64_t tokens_ = 0;
    double* sum_ = nullptr;  // [k, k] row-major, lower triangle used
  };
  std::unique_ptr<GramSum> gram_sum(int64_t k);

  // As inverse_upper_cholesky (cholesky.h): U upper with h⁻¹ = UᵀU, via a blocked Cholesky of
  // J·h·J (cuBLAS, diagonal blocks on the host) and a triangular solve (cublasStrsm). False when h
  // is not positive definite.
  bool inverse_upper_cholesky(const std::vector<float>& h, int64_t n, std::vector<float>& u);

  // GPTQ with gptq_quantize's contract (gptq_solver.h) on the device: group parameters from
  // column maxima / minima and the EXL2 grid errors computed there (the small per-group choices
  // on the host with the CPU's code), rows quantized by a kernel that matches the CPU bit for
  // bit on equal inputs, block-local rank-1 updates, and the trailing update as one cublasSgemm
  // per block. Deterministic for a given device and shape.
  GptqResult gptq(std::vector<float>& w, int64_t k, int64_t n, const std::vector<float>& hinv_upper,
                  const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                  int64_t block = 128);

  // GptqRunner's contract (linear_quantizer.h): one linear from its [N, K] weight, with the
  // permutation, the transposes and the padding done on the device; the weight (by w.id) and
  // h's factor (by h.id) stay there between calls, as a module's candidate settings share them.
  // `storage` becomes the reconstruction's buffer (its pages are reused).
  GptqLinearResult gptq_linear(const LinearWeights& w, int64_t n_pad, const PreparedHessian& h,
                               const std::vector<GptqGroupSpec>& groups, GroupQuantizerKind kind,
                               bool want_codes, std::vector<float> storage = {},
                               int64_t block = 128);

  // Where gptq_linear's host copies and group-parameter round trips go ("gptq: copies",
  // "gptq: groups"); null: not timed.
  void set_phase_times(PhaseTimes* times) { times_ = times; }

 private:
  // want_params: EXL2 group parameters are found on the device and come back only when asked.
  GptqResult run_gptq(int64_t k, int64_t n, const std::vector<GptqGroupSpec>& groups,
                      GroupQuantizerKind kind, int64_t block, bool want_params);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  PhaseTimes* times_ = nullptr;
};

}  // namespace hearth::quantizer
