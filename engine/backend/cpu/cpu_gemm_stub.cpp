// Builds without BLAS: every linear and attention of the CPU backend runs row by row.
#include "engine/backend/cpu/cpu_gemm.h"
#include "engine/core/error.h"

namespace hearth::cpu {

bool cpu_gemm_available() {
  return false;
}

void gemm_x_wt(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t) {
  fail(ErrorCode::kUnsupported, "this build of Hearth has no BLAS");
}

void gemm_x_w(const float*, int64_t, int64_t, const float*, int64_t, float*, int64_t) {
  fail(ErrorCode::kUnsupported, "this build of Hearth has no BLAS");
}

}  // namespace hearth::cpu
