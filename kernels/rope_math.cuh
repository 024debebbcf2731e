// The RoPE rotation of one pair of dims (i, i + rotary_dim/2), shared by the rope kernel and the
// decode attention that rotates q and k as it reads them: one definition, the same bits, and
// the same operations as the CPU reference (no fused multiply-adds).
#pragma once

namespace hearth::kernels::rope_math {

struct CosSin {
  float c, s;
};

__device__ __forceinline__ CosSin cos_sin(int pos, float inv_freq, float attention_factor) {
  const float angle = __fmul_rn(static_cast<float>(pos), inv_freq);
  float s, c;
  sincosf(angle, &s, &c);
  return {__fmul_rn(c, attention_factor), __fmul_rn(s, attention_factor)};
}

// x1 = v[i], x2 = v[i + half]: the new v[i] and the new v[i + half].
__device__ __forceinline__ float rotated_low(float x1, float x2, CosSin r) {
  return __fsub_rn(__fmul_rn(x1, r.c), __fmul_rn(x2, r.s));
}
__device__ __forceinline__ float rotated_high(float x1, float x2, CosSin r) {
  return __fadd_rn(__fmul_rn(x2, r.c), __fmul_rn(x1, r.s));
}

}  // namespace hearth::kernels::rope_math
