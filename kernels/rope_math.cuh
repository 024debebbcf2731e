// The RoPE rotation of one pair of dims (i, i + rotary_dim/2), shared by the rope kernel and the
// decode attention that rotates q and k as it reads them: one definition, the same bits, and
// the same operations as the CPU reference (no fused multiply-adds).
#pragma once

#include "kernels/common.cuh"

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

// The angles of the 8 dims a lane of a decode kernel's lane group holds (dims 8·gl ..).
__device__ __forceinline__ void lane_angles(int pos, int gl, const float* inv_freq, int rotary_dim,
                                            float attention_factor, CosSin angle[8]) {
  const int half = rotary_dim / 2;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int d = gl * 8 + j;
    angle[j] = d < rotary_dim ? cos_sin(pos, inv_freq[d % half], attention_factor)
                              : CosSin{1.0f, 0.0f};
  }
}

// RoPE of the 8 dims a lane holds (dims 8·gl ..): the partner dims, half a rotation away, are
// in lane gl ^ (half / 8) of the same lane group. Every lane of the warp must call it.
template <class T>
__device__ __forceinline__ void rotate8(float x[8], int gl, int rotary_dim,
                                        const CosSin r[8]) {
  const int half = rotary_dim / 2;
  float other[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) other[j] = __shfl_xor_sync(0xffffffffu, x[j], half / 8);
  if (gl * 8 >= rotary_dim) return;
  const bool low = gl * 8 < half;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    // Rounded to T as the rope kernel stores it, so the result matches rope() + attention.
    x[j] = to_f(from_f<T>(low ? rotated_low(x[j], other[j], r[j])
                              : rotated_high(other[j], x[j], r[j])));
  }
}

}  // namespace hearth::kernels::rope_math
