// The sum of squares of a row for RMSNorm, added in one order wherever a row is normalized: the
// norm pass (rms_norm_kernel, elementwise.cu), the all-reduce fused with it (all_reduce.cu) and
// the norm that the fused quantized linears fold in (finish_column_group, quant_gemv.cu). Each 32
// columns ("unit") are added as warp_sum adds a warp's values, the eight units of a 256-column
// slot in order, then the slots in order. So a row gets the same bits whichever of them
// normalizes it, and a speculative check of several rows (the norm pass) gives the tokens that
// one-row steps (the fold) give.
//
// The units are summed from the values the threads already hold, 8 consecutive columns a thread
// (4 lanes a unit) or one (a warp a unit), through shuffles that build warp_sum's tree, so the row
// is not read twice. Every lane of a warp calls them together.
#pragma once

#include "kernels/common.cuh"
#include "kernels/quant_kernels.h"

namespace hearth::kernels {

constexpr int64_t kRmsSumMaxCols = 32768;  // wider rows (no such hidden size) keep block_sum
constexpr int kRmsUnitsPerSlot = kQuantNormSlotColumns / 32;
constexpr int kRmsMaxSlots = static_cast<int>(kRmsSumMaxCols / kQuantNormSlotColumns);

// The square of a value, rounded on its own (never contracted into the first add).
__device__ __forceinline__ float rms_square(float v) {
  return __fmul_rn(v, v);
}

// Unit c0 / 32 from 8 values per thread, columns c0..c0 + 7 (c0 a multiple of 8; the unit's four
// vectors in lanes 4k..4k + 3, in order); `valid` false: columns past the row, zeros. warp_sum
// adds values 16 lanes apart, then 8, 4, 2, 1 apart: here the lane two further holds the values
// 16 columns on, the next lane those 8 on, and the rest lie in the thread.
__device__ __forceinline__ void rms_unit_sum8(const float v[8], bool valid, int64_t c0,
                                              float* unit_sums) {
  constexpr unsigned kAll = 0xffffffffu;
  float s[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) s[i] = valid ? rms_square(v[i]) : 0.0f;
#pragma unroll
  for (int i = 0; i < 8; ++i) s[i] = s[i] + __shfl_xor_sync(kAll, s[i], 2);
#pragma unroll
  for (int i = 0; i < 8; ++i) s[i] = s[i] + __shfl_xor_sync(kAll, s[i], 1);
#pragma unroll
  for (int i = 0; i < 4; ++i) s[i] = s[i] + s[i + 4];
  s[0] = s[0] + s[2];
  s[1] = s[1] + s[3];
  s[0] = s[0] + s[1];
  if (valid && c0 % 32 == 0) unit_sums[c0 / 32] = s[0];
}

// Unit c / 32 from one value per thread, column c (a warp's lanes: the unit's 32 columns).
__device__ __forceinline__ void rms_unit_sum1(float v, bool valid, int64_t c, float* unit_sums) {
  const float s = warp_sum(valid ? rms_square(v) : 0.0f);
  if (valid && c % 32 == 0) unit_sums[c / 32] = s;
}

// The row's sum from its unit sums (after a __syncthreads()), for every thread: the first
// threads add one slot's units each, then every thread adds the slots, both in order (a serial
// chain of 8 + slots adds, not 8 · slots). Units past the row add zero, as the fold's warps past
// its outputs do. slot_sums: kRmsSumMaxCols / 256 floats of shared memory; blockDim.x at least
// that many.
__device__ __forceinline__ float rms_total(const float* unit_sums, float* slot_sums, int64_t cols) {
  const int64_t units = (cols + 31) / 32;
  const int slots = static_cast<int>((cols + kQuantNormSlotColumns - 1) / kQuantNormSlotColumns);
  if (static_cast<int>(threadIdx.x) < slots) {
    float slot = 0.0f;
#pragma unroll
    for (int j = 0; j < kRmsUnitsPerSlot; ++j) {
      const int64_t u = int64_t(threadIdx.x) * kRmsUnitsPerSlot + j;
      slot += u < units ? unit_sums[u] : 0.0f;
    }
    slot_sums[threadIdx.x] = slot;
  }
  __syncthreads();
  float total = 0.0f;
  for (int s = 0; s < slots; ++s) total += slot_sums[s];
  return total;
}

}  // namespace hearth::kernels
