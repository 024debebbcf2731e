// The input Hessian of a linear layer, H = 2·XᵀX / tokens over the calibration tokens X [T, K]
// (one H serves every layer that reads the same input: q/k/v, gate/up), and its preparation for
// GPTQ: act-order permutation, damping, and the upper Cholesky factor of H⁻¹, with more damping
// when H is not numerically positive definite (docs/FORMATS.md §3.3.4, §5.10).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "engine/quantizer/cpu_blas.h"

namespace hearth {
class ThreadPool;
}

namespace hearth::quantizer {

class HessianAccumulator {
 public:
  // `path`: each batch's XᵀX by the dot-product loops or by BLAS (SGEMM over column panels).
  explicit HessianAccumulator(int64_t k, CpuMathPath path = default_cpu_math_path());
  int64_t k() const { return k_; }
  int64_t tokens() const { return tokens_; }
  // Adds rows x[t, 0..K) for t < rows (row-major, K floats per row). The sum of each batch is
  // formed in float and added to a double total, so the result does not depend on the thread
  // count; it does depend on how the tokens are cut into batches (callers keep that fixed).
  void add(const float* x, int64_t rows, ThreadPool& pool);
  // H = 2·XᵀX / tokens as float, full symmetric; the identity when no tokens were added.
  // `pool` only spreads the work.
  std::vector<float> finish(ThreadPool* pool = nullptr) const;

 private:
  void add_with_loops(const float* x, int64_t rows, ThreadPool& pool);
  void add_with_blas(const float* x, int64_t rows, ThreadPool& pool);

  int64_t k_;
  CpuMathPath path_;
  int64_t tokens_ = 0;
  std::vector<double> sum_;  // lower triangle used, [K, K]
};

struct PreparedHessian {
  int64_t k = 0;
  std::vector<int32_t> perm;      // stored row s holds input feature perm[s]
  std::vector<float> hinv_upper;  // upper Cholesky factor of (permuted, damped H)⁻¹, [K, K]
  double damp = 0;                // damping added to the diagonal in the end
  int extra_damping = 0;          // times the damping was added again
  uint64_t id = 0;  // unique per prepare_hessian call: a device copy of hinv_upper keys on it
};

struct HessianOptions {
  bool act_order = true;        // permute by decreasing diagonal
  double damp_fraction = 0.12;  // of the mean diagonal (EXL2: 0.12, GPTQ: 0.01)
  double min_damp = 1e-5;
  int max_attempts = 10;  // damping steps before giving up
  // The factorization (inverse_upper_cholesky's contract); empty: the CPU reference. The GPU
  // path (CudaQuantMath) plugs in here.
  std::function<bool(const std::vector<float>& h, int64_t n, std::vector<float>& u)> factor;
};

// Permutes, damps and factors H. Throws Error(kInternal) naming `layer` when H is still not
// positive definite after `max_attempts` dampings (or holds NaN/inf).
PreparedHessian prepare_hessian(const std::vector<float>& h, int64_t k,
                                const HessianOptions& options, const std::string& layer,
                                ThreadPool& pool, std::vector<std::string>* warnings = nullptr);

// The permutation alone: argsort(diag(H)) descending, ties broken by index (stable).
std::vector<int32_t> act_order_permutation(const std::vector<float>& h, int64_t k);

}  // namespace hearth::quantizer
