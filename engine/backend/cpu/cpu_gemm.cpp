#include "engine/backend/cpu/cpu_gemm.h"

#include <cblas.h>

#include <mutex>

namespace hearth::cpu {

bool cpu_gemm_available() {
  return true;
}

void gemm_x_wt(const float* x, int64_t rows, int64_t k, const float* w, int64_t n, float* y,
               int64_t ldy) {
  // OpenBLAS's thread count is process-wide; the quantizer sets the same.
  static std::once_flag single;
  std::call_once(single, [] { openblas_set_num_threads(1); });
  const auto b = [](int64_t v) { return static_cast<blasint>(v); };
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, b(rows), b(n), b(k), 1.0f, x, b(k), w, b(k),
              0.0f, y, b(ldy));
}

}  // namespace hearth::cpu
