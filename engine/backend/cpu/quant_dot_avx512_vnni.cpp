// Compiled with AVX-512 VNNI (256-bit forms, AVX512VL); called only where the CPU has it.
#include "engine/backend/cpu/quant_dot_simd.h"

namespace hearth::cpu {

void quant_dot_avx512_vnni(const QuantDotArgs& args) {
  simd_dot_outputs<true>(args);
}

}  // namespace hearth::cpu
