#include "engine/quantizer/cholesky.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/backend/cpu/cpu_math.h"
#include "engine/core/thread_pool.h"

namespace hearth::quantizer {
namespace {

constexpr int64_t kBlock = 64;

}  // namespace

bool cholesky_lower_inplace(std::vector<float>& a, int64_t n, ThreadPool& pool) {
  float* A = a.data();
  bool ok = true;
  for (int64_t k0 = 0; k0 < n && ok; k0 += kBlock) {
    const int64_t k1 = std::min(n, k0 + kBlock);
    // Diagonal block (its entries already carry the updates of earlier panels).
    for (int64_t i = k0; i < k1 && ok; ++i) {
      float* Li = A + i * n;
      for (int64_t j = k0; j < i; ++j) {
        const float* Lj = A + j * n;
        Li[j] = (Li[j] - cpu::dot(Li + k0, Lj + k0, j - k0)) / Lj[j];
      }
      const float d = Li[i] - cpu::dot(Li + k0, Li + k0, i - k0);
      if (!(d > 0.0f) || !std::isfinite(d)) {
        ok = false;
        break;
      }
      Li[i] = std::sqrt(d);
    }
    if (!ok) break;
    // Panel below the diagonal block (rows independent), then the trailing update, which reads
    // other rows' panel entries and so waits for the whole panel.
    pool.parallel_for(n - k1, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t i = k1 + r0; i < k1 + r1; ++i) {
        float* Li = A + i * n;
        for (int64_t j = k0; j < k1; ++j) {
          const float* Lj = A + j * n;
          Li[j] = (Li[j] - cpu::dot(Li + k0, Lj + k0, j - k0)) / Lj[j];
        }
      }
    });
    pool.parallel_for(n - k1, 4, [&](int64_t r0, int64_t r1) {
      for (int64_t i = k1 + r0; i < k1 + r1; ++i) {
        float* Li = A + i * n;
        for (int64_t j = k1; j <= i; ++j) {
          Li[j] -= cpu::dot(Li + k0, A + j * n + k0, k1 - k0);
        }
      }
    });
  }
  if (!ok) return false;
  for (int64_t i = 0; i < n; ++i) {
    std::fill(A + i * n + i + 1, A + (i + 1) * n, 0.0f);
  }
  return true;
}

std::vector<float> invert_lower_triangular(const std::vector<float>& l, int64_t n,
                                           ThreadPool& pool) {
  std::vector<float> x(static_cast<size_t>(n * n), 0.0f);
  const float* L = l.data();
  float* X = x.data();
  // Columns of X are independent: X[:, j] solves L·X[:, j] = e_j. Each worker takes a range of
  // columns and walks rows downwards: X[i, cols] = −Σ_{k<i} L[i][k]·X[k, cols] / L[i][i].
  constexpr int64_t kCols = 32;
  const int64_t chunks = (n + kCols - 1) / kCols;
  pool.parallel_for(chunks, 1, [&](int64_t c0, int64_t c1) {
    std::vector<float> acc(kCols);
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t j0 = c * kCols;
      const int64_t j1 = std::min(n, j0 + kCols);
      for (int64_t i = j0; i < n; ++i) {
        const float* Li = L + i * n;
        // Only columns j <= i are non-zero in row i.
        const int64_t jend = std::min(j1, i + 1);
        std::fill(acc.begin(), acc.end(), 0.0f);
        for (int64_t k = j0; k < i; ++k) {
          const float lik = Li[k];
          if (lik == 0.0f) continue;
          const float* Xk = X + k * n;
          const int64_t kend = std::min(jend, k + 1);
          for (int64_t j = j0; j < kend; ++j) acc[j - j0] += lik * Xk[j];
        }
        float* Xi = X + i * n;
        const float inv = 1.0f / Li[i];
        for (int64_t j = j0; j < jend; ++j) {
          Xi[j] = ((j == i ? 1.0f : 0.0f) - acc[j - j0]) * inv;
        }
      }
    }
  });
  return x;
}

bool inverse_upper_cholesky(const std::vector<float>& h, int64_t n, ThreadPool& pool,
                            std::vector<float>& u, CpuMathPath path) {
  // J·h·J: both axes reversed.
  std::vector<float> r(static_cast<size_t>(n * n));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) r[i * n + j] = h[(n - 1 - i) * n + (n - 1 - j)];
  }
  std::vector<float> x;
  if (path == CpuMathPath::kBlas) {
    // Only the lower triangle of r is factored, inverted and read below.
    if (!lapack_cholesky_lower(r.data(), n) || !lapack_invert_lower(r.data(), n)) return false;
    x = std::move(r);
  } else {
    if (!cholesky_lower_inplace(r, n, pool)) return false;
    x = invert_lower_triangular(r, n, pool);
  }
  u.assign(static_cast<size_t>(n * n), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = i; j < n; ++j) {
      const float v = x[(n - 1 - i) * n + (n - 1 - j)];
      if (!std::isfinite(v)) return false;
      u[i * n + j] = v;
    }
  }
  return true;
}

}  // namespace hearth::quantizer
