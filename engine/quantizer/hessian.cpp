#include "engine/quantizer/hessian.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <numeric>

#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/error.h"
#include "engine/core/thread_pool.h"
#include "engine/quantizer/cholesky.h"
#include "engine/quantizer/finite_check.h"

namespace hearth::quantizer {

HessianAccumulator::HessianAccumulator(int64_t k, CpuMathPath path)
    : k_(k), path_(path), sum_(static_cast<size_t>(k * k), 0.0) {}

void HessianAccumulator::add(const float* x, int64_t rows, ThreadPool& pool) {
  if (rows <= 0) return;
  if (path_ == CpuMathPath::kBlas) {
    add_with_blas(x, rows, pool);
  } else {
    add_with_loops(x, rows, pool);
  }
  tokens_ += rows;
}

void HessianAccumulator::add_with_loops(const float* x, int64_t rows, ThreadPool& pool) {
  const int64_t K = k_;
  // Xᵀ [K, rows] so that every entry is a contiguous dot product.
  std::vector<float> xt(static_cast<size_t>(K * rows));
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 0; i < K; ++i) xt[i * rows + t] = x[t * K + i];
  }
  pool.parallel_for(K, 8, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* xi = xt.data() + i * rows;
      double* si = sum_.data() + i * K;
      int64_t j = 0;
      float out[4];
      for (; j + 4 <= i + 1; j += 4) {
        const float* xj = xt.data() + j * rows;
        cpu::dot4(xi, xj, xj + rows, xj + 2 * rows, xj + 3 * rows, rows, out);
        for (int q = 0; q < 4; ++q) si[j + q] += out[q];
      }
      for (; j <= i; ++j) si[j] += cpu::dot(xi, xt.data() + j * rows, rows);
    }
  });
}

// The batch's XᵀX in float by SGEMM over panels (the GPU's GramSum forms it by SYRK), added to
// the double total.
void HessianAccumulator::add_with_blas(const float* x, int64_t rows, ThreadPool& pool) {
  blas_add_gram_lower(x, rows, k_, sum_.data(), pool);
}

std::vector<float> HessianAccumulator::finish(ThreadPool* pool) const {
  const int64_t K = k_;
  std::vector<float> h(static_cast<size_t>(K * K), 0.0f);
  if (tokens_ == 0) {
    for (int64_t i = 0; i < K; ++i) h[i * K + i] = 1.0f;
    return h;
  }
  const double scale = 2.0 / static_cast<double>(tokens_);
  // Tiles of rows × columns so that the mirrored writes stay in cache (K is up to ~30k).
  constexpr int64_t kTile = 64;
  const int64_t tiles = (K + kTile - 1) / kTile;
  auto rows = [&](int64_t t0, int64_t t1) {
    for (int64_t ti = t0; ti < t1; ++ti) {
      const int64_t i0 = ti * kTile, i1 = std::min(K, i0 + kTile);
      for (int64_t j0 = 0; j0 < i1; j0 += kTile) {
        for (int64_t i = i0; i < i1; ++i) {
          const int64_t j1 = std::min(i + 1, j0 + kTile);
          for (int64_t j = j0; j < j1; ++j) {
            const auto v = static_cast<float>(sum_[i * K + j] * scale);
            h[i * K + j] = v;
            h[j * K + i] = v;
          }
        }
      }
    }
  };
  if (pool) {
    pool->parallel_for(tiles, 1, rows);
  } else {
    rows(0, tiles);
  }
  return h;
}

std::vector<int32_t> act_order_permutation(const std::vector<float>& h, int64_t k) {
  std::vector<int32_t> perm(static_cast<size_t>(k));
  std::iota(perm.begin(), perm.end(), 0);
  std::stable_sort(perm.begin(), perm.end(), [&](int32_t a, int32_t b) {
    return h[static_cast<size_t>(a) * k + a] > h[static_cast<size_t>(b) * k + b];
  });
  return perm;
}

PreparedHessian prepare_hessian(const std::vector<float>& h, int64_t k,
                                const HessianOptions& options, const std::string& layer,
                                ThreadPool& pool, std::vector<std::string>* warnings) {
  HEARTH_CHECK(static_cast<int64_t>(h.size()) == k * k, "Hessian size");
  static std::atomic<uint64_t> next_id{1};
  PreparedHessian out;
  out.k = k;
  out.id = next_id.fetch_add(1);
  if (!all_finite(h, pool)) {
    fail(ErrorCode::kInternal, layer +
                                   ": the calibration Hessian holds NaN or infinity (the "
                                   "activations overflowed); it cannot be quantized");
  }
  if (options.act_order) {
    out.perm = act_order_permutation(h, k);
  } else {
    out.perm.resize(static_cast<size_t>(k));
    std::iota(out.perm.begin(), out.perm.end(), 0);
  }
  std::vector<float> hp(static_cast<size_t>(k * k));
  pool.parallel_for(k, 16, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i) {
      const float* src = h.data() + static_cast<int64_t>(out.perm[i]) * k;
      float* dst = hp.data() + i * k;
      for (int64_t j = 0; j < k; ++j) dst[j] = src[out.perm[j]];
    }
  });
  double diag_sum = 0;
  for (int64_t i = 0; i < k; ++i) diag_sum += hp[i * k + i];
  const double damp =
      std::max(options.damp_fraction * diag_sum / static_cast<double>(k), options.min_damp);
  for (int attempt = 1; attempt <= options.max_attempts; ++attempt) {
    for (int64_t i = 0; i < k; ++i) hp[i * k + i] += static_cast<float>(damp);
    out.damp = damp * attempt;
    const bool ok = options.factor ? options.factor(hp, k, out.hinv_upper)
                                   : inverse_upper_cholesky(hp, k, pool, out.hinv_upper);
    if (ok) {
      out.extra_damping = attempt - 1;
      if (attempt > 1 && warnings) {
        warnings->push_back(layer + ": applied additional damping (" + std::to_string(attempt) +
                            "x) to make the Hessian positive definite");
      }
      return out;
    }
  }
  fail(ErrorCode::kInternal,
       layer + ": the calibration Hessian is not positive definite even after " +
           std::to_string(options.max_attempts) +
           " damping steps; this layer cannot be quantized (try more or different calibration "
           "data)");
}

}  // namespace hearth::quantizer
