// Compiled with -mavx2 -mfma; called only where the CPU has both.
#include "engine/backend/cpu/quant_dot_simd.h"

namespace hearth::cpu {

void quant_dot_avx2(const QuantDotArgs& args) {
  simd_dot_outputs<false>(args);
}

}  // namespace hearth::cpu
