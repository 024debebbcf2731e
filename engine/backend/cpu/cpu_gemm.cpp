#include "engine/backend/cpu/cpu_gemm.h"

#include <cblas.h>

#include <mutex>

namespace hearth::cpu {

bool cpu_gemm_available() {
  return true;
}

namespace {

// OpenBLAS's thread count is process-wide; the quantizer sets the same.
void single_threaded() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

blasint as_blas(int64_t v) {
  return static_cast<blasint>(v);
}

}  // namespace

void gemm_x_wt(const float* x, int64_t rows, int64_t k, const float* w, int64_t n, float* y,
               int64_t ldy) {
  single_threaded();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, as_blas(rows), as_blas(n), as_blas(k), 1.0f,
              x, as_blas(k), w, as_blas(k), 0.0f, y, as_blas(ldy));
}

void gemm_x_w(const float* x, int64_t rows, int64_t k, const float* w, int64_t n, float* y,
              int64_t ldy) {
  single_threaded();
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, as_blas(rows), as_blas(n), as_blas(k),
              1.0f, x, as_blas(k), w, as_blas(n), 0.0f, y, as_blas(ldy));
}

}  // namespace hearth::cpu
