// Builds without BLAS: the quantizer's CPU linear algebra runs on its own loops.
#include "engine/core/error.h"
#include "engine/quantizer/cpu_blas.h"

namespace hearth::quantizer {
namespace {

[[noreturn]] void no_blas() {
  fail(ErrorCode::kUnsupported, "this build of Hearth has no BLAS");
}

}  // namespace

bool cpu_blas_available() {
  return false;
}

CpuMathPath default_cpu_math_path() {
  return CpuMathPath::kLoops;
}

void blas_add_gram_lower(const float*, int64_t, int64_t, double*, ThreadPool&) {
  no_blas();
}

void blas_subtract_at_b(const float*, int64_t, const float*, int64_t, int64_t, int64_t, int64_t,
                        float*, int64_t, ThreadPool&) {
  no_blas();
}

bool lapack_cholesky_lower(float*, int64_t) {
  no_blas();
}

bool lapack_invert_lower(float*, int64_t) {
  no_blas();
}

}  // namespace hearth::quantizer
