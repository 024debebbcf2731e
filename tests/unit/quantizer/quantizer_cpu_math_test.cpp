// The quantizer's fast CPU paths against its plain loops on random data: the BLAS path
// (cpu_blas.h: the Hessian's SYRK, LAPACK's factorization, GPTQ's blocked update as one GEMM)
// within stated tolerances, since BLAS sums in another order, and the EXL2 grid search's vector
// path bit for bit against its scalar loop. The BLAS tests skip in builds without BLAS;
// scripts/setup.sh installs it, so CI runs them.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/core/thread_pool.h"
#include "engine/quantizer/cholesky.h"
#include "engine/quantizer/cpu_blas.h"
#include "engine/quantizer/exl2_grid_search.h"
#include "engine/quantizer/gptq_solver.h"
#include "engine/quantizer/group_quantizer.h"
#include "engine/quantizer/hessian.h"

namespace hearth::quantizer {
namespace {

#define REQUIRE_BLAS() \
  if (!cpu_blas_available()) GTEST_SKIP() << "skipped: this build has no BLAS"

// Rows of correlated features, as real activations are.
std::vector<float> random_rows(int64_t rows, int64_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(rows * k));
  for (auto& v : x) v = d(rng);
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t i = 1; i < k; ++i) x[t * k + i] += 0.5f * x[t * k + i - 1];
  }
  return x;
}

std::vector<float> hessian_of(int64_t k, int64_t rows, uint32_t seed) {
  ThreadPool pool(2);
  HessianAccumulator acc(k, CpuMathPath::kLoops);
  const std::vector<float> x = random_rows(rows, k, seed);
  acc.add(x.data(), rows, pool);
  return acc.finish();
}

// max |a − b| / max |a|.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double scale = 0, diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    scale = std::max(scale, std::fabs(double(a[i])));
    diff = std::max(diff, std::fabs(double(a[i]) - b[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(CpuBlas, HessianMatchesTheLoops) {
  REQUIRE_BLAS();
  ThreadPool pool(2);
  for (int64_t k : {1, 31, 150, 576}) {
    HessianAccumulator loops(k, CpuMathPath::kLoops), blas(k, CpuMathPath::kBlas);
    uint32_t seed = static_cast<uint32_t>(k);
    for (int64_t rows : {77, 1, 300}) {
      const std::vector<float> x = random_rows(rows, k, seed++);
      loops.add(x.data(), rows, pool);
      blas.add(x.data(), rows, pool);
    }
    EXPECT_EQ(blas.tokens(), loops.tokens());
    // Each batch is summed in float in both, in different orders: a few ulps of the largest
    // entry apart.
    EXPECT_LT(relative_difference(loops.finish(), blas.finish()), 1e-5) << "k = " << k;
  }
}

TEST(CpuBlas, HessianDoesNotDependOnThreads) {
  REQUIRE_BLAS();
  const int64_t k = 300, rows = 256;
  const std::vector<float> x = random_rows(rows, k, 17);
  ThreadPool one(1), two(2);
  HessianAccumulator a(k, CpuMathPath::kBlas), b(k, CpuMathPath::kBlas);
  a.add(x.data(), rows, one);
  b.add(x.data(), rows, two);
  EXPECT_EQ(a.finish(), b.finish());
}

TEST(CpuBlas, InverseCholeskyMatchesTheLoops) {
  REQUIRE_BLAS();
  ThreadPool pool(2);
  for (int64_t n : {1, 7, 64, 65, 150, 600}) {
    std::vector<float> h = hessian_of(n, 4 * n + 16, 40 + static_cast<uint32_t>(n));
    for (int64_t i = 0; i < n; ++i) h[i * n + i] += 0.01f;
    std::vector<float> loops, blas;
    ASSERT_TRUE(inverse_upper_cholesky(h, n, pool, loops, CpuMathPath::kLoops)) << n;
    ASSERT_TRUE(inverse_upper_cholesky(h, n, pool, blas, CpuMathPath::kBlas)) << n;
    // Both are float factorizations of the same matrix (the tolerance the GPU's factor is held
    // to against the loops in tests/gpu as well); the strict lower triangle is zero in both.
    EXPECT_LT(relative_difference(loops, blas), 1e-3) << "n = " << n;
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < i; ++j) ASSERT_EQ(blas[i * n + j], 0.0f);
    }
  }
  // Not positive definite: both refuse.
  std::vector<float> bad(16 * 16, 0.0f);
  for (int i = 0; i < 16; ++i) bad[i * 16 + i] = i == 3 ? -1.0f : 1.0f;
  std::vector<float> u;
  EXPECT_FALSE(inverse_upper_cholesky(bad, 16, pool, u, CpuMathPath::kLoops));
  EXPECT_FALSE(inverse_upper_cholesky(bad, 16, pool, u, CpuMathPath::kBlas));
}

// The GEMM wrapper on strided sub-matrices (as GPTQ calls it), larger than one of its blocks
// both ways, against double sums.
TEST(CpuBlas, SubtractATransposedBMatchesDoubleSums) {
  REQUIRE_BLAS();
  std::mt19937 rng(5);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const int64_t inner = 37, m = 150, n = 300, lda = 160, ldb = 310, ldc = 320;
  std::vector<float> a(static_cast<size_t>(inner * lda)), b(static_cast<size_t>(inner * ldb));
  std::vector<float> c(static_cast<size_t>(m * ldc));
  for (auto* v : {&a, &b, &c}) {
    for (auto& x : *v) x = d(rng);
  }
  std::vector<float> got = c;
  ThreadPool pool(2);
  blas_subtract_at_b(a.data(), lda, b.data(), ldb, m, n, inner, got.data(), ldc, pool);
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      double want = c[i * ldc + j];
      if (j < n) {
        for (int64_t t = 0; t < inner; ++t) want -= double(a[t * lda + i]) * b[t * ldb + j];
      }
      // Float products summed over 37 terms of size ~1: well within 1e-4.
      ASSERT_NEAR(got[i * ldc + j], want, 1e-4) << i << ", " << j;  // j ≥ n untouched
    }
  }
}

// GPTQ with the blocked update as a GEMM against the loops: the same quantization up to the
// order of float updates, which moves a few rounding decisions near ties.
TEST(CpuBlas, GptqMatchesTheLoops) {
  REQUIRE_BLAS();
  ThreadPool pool(2);
  const int64_t K = 320, N = 200;
  const PreparedHessian h = prepare_hessian(hessian_of(K, 1024, 3), K, {}, "x", pool);
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 0.05f);
  std::vector<float> w0(static_cast<size_t>(K * N));
  for (auto& v : w0) v = d(rng);
  const std::vector<GptqGroupSpec> groups = {{0, 64, 8}, {64, 32, 6}, {96, 224, 4}};
  const FindParams find = [&pool](const float* p, int64_t rows, int64_t n, int bits) {
    return exl2_find_params(p, rows, n, n, bits, &pool);
  };
  std::vector<float> wl = w0, wb = w0;
  const GptqResult loops =
      gptq_quantize(wl, K, N, h.hinv_upper, groups, find, pool, 128, CpuMathPath::kLoops);
  const GptqResult blas =
      gptq_quantize(wb, K, N, h.hinv_upper, groups, find, pool, 128, CpuMathPath::kBlas);
  EXPECT_NEAR(blas.proxy_error, loops.proxy_error, 0.01 * loops.proxy_error);
  int64_t differ = 0;
  for (size_t i = 0; i < loops.codes.size(); ++i) differ += loops.codes[i] != blas.codes[i];
  EXPECT_LT(differ, static_cast<int64_t>(loops.codes.size() / 100));
  // The first block's rows see no blocked update yet: identical.
  for (int64_t i = 0; i < 64 * N; ++i) ASSERT_EQ(loops.codes[i], blas.codes[i]) << i;
}

// The vector path (one lane per multiplier) repeats the scalar loop's operations in its order:
// the same doubles, on every width (tails of 8 columns), bit width (clamps) and row count.
TEST(Exl2GridSearch, VectorPathEqualsTheScalarLoop) {
  std::mt19937 rng(21);
  std::normal_distribution<float> d(0.0f, 0.05f);
  ThreadPool pool(2);
  for (int64_t n : {1, 7, 8, 33, 200}) {
    for (int bits : {2, 3, 4, 5, 6, 8}) {
      const int64_t rows = 1 + (n * bits) % 70, stride = n + 3;
      std::vector<float> w(static_cast<size_t>(rows * stride));
      for (auto& v : w) v = d(rng);
      w[static_cast<size_t>(rows * stride / 2)] = 0.9f;  // an outlier: others round to zero
      std::vector<float> base(static_cast<size_t>(n));
      const float maxq = static_cast<float>((1 << bits) - 1);
      for (int64_t c = 0; c < n; ++c) {
        float m = 0;
        for (int64_t r = 0; r < rows; ++r) m = std::max(m, std::fabs(w[r * stride + c]));
        base[c] = (m + 1e-12f) / (maxq / 2.0f);
      }
      // A smaller scale than the search's own for every other column, so that clamps happen.
      Exl2ScaleCandidates cand = exl2_scale_candidates(base);
      for (int64_t c = 0; c < n; c += 2) cand.scale[c] *= 0.3f;
      const std::vector<double> scalar =
          exl2_grid_errors_scalar(w.data(), rows, n, stride, cand.scale.data(), bits);
      EXPECT_EQ(exl2_grid_errors(w.data(), rows, n, stride, cand.scale.data(), bits), scalar)
          << "n " << n << " bits " << bits;
      EXPECT_EQ(exl2_grid_errors(w.data(), rows, n, stride, cand.scale.data(), bits, &pool), scalar)
          << "n " << n << " bits " << bits;
    }
  }
}

}  // namespace
}  // namespace hearth::quantizer
