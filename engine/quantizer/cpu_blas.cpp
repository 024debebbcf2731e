// The BLAS path of the quantizer's CPU linear algebra, on OpenBLAS (CBLAS for the level-3 calls,
// LAPACK's Fortran interface for the factorizations). LAPACK is column-major: a row-major lower
// triangle is its upper triangle, so the factorizations run as 'U' on the same buffer.
#include "engine/quantizer/cpu_blas.h"

#include <cblas.h>
#include <lapack.h>

#include <algorithm>
#include <vector>

#include "engine/core/error.h"
#include "engine/core/thread_pool.h"

namespace hearth::quantizer {
namespace {

constexpr int64_t kGramPanel = 64;   // columns of XᵀX per SGEMM
constexpr int64_t kBlockRows = 64;   // rows of c per SGEMM in blas_subtract_at_b
constexpr int64_t kBlockCols = 256;  // columns of c per SGEMM in blas_subtract_at_b

// Called on the calling thread before the pool's workers call OpenBLAS.
void single_threaded() {
  openblas_set_num_threads(1);
}

blasint as_blas(int64_t v) {
  return static_cast<blasint>(v);
}

}  // namespace

bool cpu_blas_available() {
  return true;
}

CpuMathPath default_cpu_math_path() {
  return CpuMathPath::kBlas;
}

void blas_add_gram_lower(const float* x, int64_t rows, int64_t k, double* sum, ThreadPool& pool) {
  if (rows <= 0 || k <= 0) return;
  single_threaded();
  // Panel p (columns [64p, 64p + 64)) needs the rows from 64p down: k − 64p of them. Work item
  // i takes panels i and panels − 1 − i, so that the pool's equal ranges hold equal work.
  const int64_t panels = (k + kGramPanel - 1) / kGramPanel;
  pool.parallel_for((panels + 1) / 2, 1, [&](int64_t i0, int64_t i1) {
    std::vector<float> panel;
    auto add_panel = [&](int64_t p) {
      const int64_t j0 = p * kGramPanel, w = std::min(kGramPanel, k - j0), m = k - j0;
      panel.resize(static_cast<size_t>(m * w));
      // panel[r][c] = Σ_t x[t][j0 + r]·x[t][j0 + c]
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, as_blas(m), as_blas(w), as_blas(rows),
                  1.0f, x + j0, as_blas(k), x + j0, as_blas(k), 0.0f, panel.data(), as_blas(w));
      for (int64_t r = 0; r < m; ++r) {
        double* dst = sum + (j0 + r) * k + j0;
        const float* src = panel.data() + r * w;
        for (int64_t c = 0; c < std::min(w, r + 1); ++c) dst[c] += src[c];
      }
    };
    for (int64_t i = i0; i < i1; ++i) {
      add_panel(i);
      if (panels - 1 - i != i) add_panel(panels - 1 - i);
    }
  });
}

void blas_subtract_at_b(const float* a, int64_t lda, const float* b, int64_t ldb, int64_t m,
                        int64_t n, int64_t inner, float* c, int64_t ldc, ThreadPool& pool) {
  if (m <= 0 || n <= 0 || inner <= 0) return;
  single_threaded();
  const int64_t row_blocks = (m + kBlockRows - 1) / kBlockRows;
  const int64_t col_blocks = (n + kBlockCols - 1) / kBlockCols;
  pool.parallel_for(row_blocks * col_blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t blk = b0; blk < b1; ++blk) {
      const int64_t m0 = blk / col_blocks * kBlockRows, n0 = blk % col_blocks * kBlockCols;
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, as_blas(std::min(kBlockRows, m - m0)),
                  as_blas(std::min(kBlockCols, n - n0)), as_blas(inner), -1.0f, a + m0,
                  as_blas(lda), b + n0, as_blas(ldb), 1.0f, c + m0 * ldc + n0, as_blas(ldc));
    }
  });
}

bool lapack_cholesky_lower(float* a, int64_t n) {
  if (n <= 0) return true;
  single_threaded();  // spotrf blocks differently with several threads: other bits
  const auto nn = static_cast<lapack_int>(n);
  lapack_int info = 0;
  LAPACK_spotrf("U", &nn, a, &nn, &info);
  HEARTH_CHECK(info >= 0, "spotrf: bad argument");
  return info == 0;
}

bool lapack_invert_lower(float* l, int64_t n) {
  if (n <= 0) return true;
  single_threaded();
  const auto nn = static_cast<lapack_int>(n);
  lapack_int info = 0;
  LAPACK_strtri("U", "N", &nn, l, &nn, &info);
  HEARTH_CHECK(info >= 0, "strtri: bad argument");
  return info == 0;
}

}  // namespace hearth::quantizer
