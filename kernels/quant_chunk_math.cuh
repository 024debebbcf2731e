// Per-chunk arithmetic of the quantized matrix product (kernels/quant_gemv.cu) and of the
// dequantizer (kernels/quant_dequant.cu): group scales and zeros, code decoding to exact (q − z)
// half2 pairs, the mma.sync steps of one chunk, the K slices and their in-order sums.
//
// Group record ("meta", kMetaWords 32-bit words, staged in shared memory per group): GPTQ scales
// in words 0..15 (32 halves, the lane of output g reads its four outputs g + 8j at half 4g), the
// asymmetric zeros as 1024 + z in words 16..31; for EXL2 the 4-bit scale codes in words 0..3 and
// the group's fp16 scale_max in word 32.
#pragma once

#include <type_traits>

#include "kernels/common.cuh"
#include "kernels/quant_kernels.h"
#include "kernels/quant_tile_codec.cuh"

namespace hearth::kernels::qchunk {

constexpr int kMetaWords = 36;  // one group record; a multiple of 4 keeps cp.async aligned

__device__ __forceinline__ __half2 as_half2(uint32_t v) {
  return *reinterpret_cast<__half2*>(&v);
}
__device__ __forceinline__ uint32_t as_u32(__half2 v) {
  return *reinterpret_cast<uint32_t*>(&v);
}

// Scales (and zeros as 1024 + z) of the lane's four outputs g + 8j for one group record.
// EXL2: scale = (code + 1)² · scale_max rounded once to fp16, computed in half2: code + 1 and its
// square are exact in fp16 and the product with scale_max is rounded once, so the value is the
// reference dequantizer's bit for bit.
template <QuantKind KIND>
__device__ __forceinline__ void group_scales(const uint32_t* meta, int g, int bits, __half2 sc[4],
                                             __half2 zz[4]) {
  if constexpr (KIND == QuantKind::kExl2) {
    const uint32_t codes = reinterpret_cast<const uint16_t*>(meta)[g];
    const __half2 mx = __half2half2(__ushort_as_half(static_cast<unsigned short>(meta[32])));
    const __half2 one_less = __float2half2_rn(1023.0f);  // (1024 + c) − 1023 = c + 1
    const uint32_t c01 = (codes & 0xFu) | ((codes << 12) & 0xF0000u) | qtile::kMagic;
    const uint32_t c23 = ((codes >> 8) & 0xFu) | ((codes << 4) & 0xF0000u) | qtile::kMagic;
    __half2 q01 = __hsub2(as_half2(c01), one_less);
    __half2 q23 = __hsub2(as_half2(c23), one_less);
    q01 = __hmul2(__hmul2(q01, q01), mx);
    q23 = __hmul2(__hmul2(q23, q23), mx);
    sc[0] = __low2half2(q01);
    sc[1] = __high2half2(q01);
    sc[2] = __low2half2(q23);
    sc[3] = __high2half2(q23);
  } else {
    const uint2 s = reinterpret_cast<const uint2*>(meta)[g];  // 4 halves: outputs g + 8j
    const __half* sh = reinterpret_cast<const __half*>(&s);
#pragma unroll
    for (int j = 0; j < 4; ++j) sc[j] = __half2half2(sh[j]);
  }
  if constexpr (KIND == QuantKind::kGptqAsym) {
    const uint2 z = reinterpret_cast<const uint2*>(meta + 16)[g];
    const __half* zh = reinterpret_cast<const __half*>(&z);
#pragma unroll
    for (int j = 0; j < 4; ++j) zz[j] = __half2half2(zh[j]);
  } else {
    const __half2 z = __half2half2(__float2half_rn(1024.0f + static_cast<float>(1 << (bits - 1))));
#pragma unroll
    for (int j = 0; j < 4; ++j) zz[j] = z;
  }
}

// Calls f(std::integral_constant<int, B>{}) for a chunk width `bits` (2, 3, 4, 5, 6; else 8), so
// that the per-width code is compiled once per width and chosen by one switch.
template <class F>
__device__ __forceinline__ void with_width(int bits, F&& f) {
  switch (bits) {
    case 2:
      f(std::integral_constant<int, 2>{});
      break;
    case 3:
      f(std::integral_constant<int, 3>{});
      break;
    case 4:
      f(std::integral_constant<int, 4>{});
      break;
    case 5:
      f(std::integral_constant<int, 5>{});
      break;
    case 6:
      f(std::integral_constant<int, 6>{});
      break;
    default:
      f(std::integral_constant<int, 8>{});
      break;
  }
}

// (a & mask) | magic in one LOP3: written as PTX so that both constants stay operands (C++
// constant folding would leave two LOP3s, as SASS takes only one immediate per LOP3).
__device__ __forceinline__ uint32_t and_or(uint32_t a, uint32_t mask, uint32_t magic) {
  uint32_t d;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(d) : "r"(a), "r"(mask), "r"(magic));
  return d;
}

// 960 − (1024 + z) = −(64 + z), exact in fp16: the constant term of the 4-bit high-nibble decode.
__device__ __forceinline__ void high_nibble_offsets(const __half2 zz[4], __half2 neg_z64[4]) {
#pragma unroll
  for (int j = 0; j < 4; ++j) neg_z64[j] = __hsub2(__float2half2_rn(960.0f), zz[j]);
}

// (q − z) of the lane's 16 pairs as exact fp16 half2 values. 4-bit: two masks per word give
// 1024 + q (low nibble of each byte) and 1024 + 16q (high nibble) with no shift, and one fused
// multiply-add turns the latter into (1024 + 16q)/16 − (64 + z) = q − z, exactly (neg_z64 holds
// −(64 + z)); one shift per word reaches the upper byte. Other widths: the codec's decode, then
// (1024 + q) − (1024 + z).
template <int B>
__device__ __forceinline__ void chunk_codes(const uint32_t w[B], const __half2 zz[4],
                                            const __half2 neg_z64[4], uint32_t qz[qtile::kPairs]) {
  if constexpr (B == 4) {
    const __half2 sixteenth = __float2half2_rn(0.0625f);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int even = 2 * (i >> 1);  // slot of pairs 4i and 4i + 2; pairs 4i + 1, 4i + 3: even + 1
      const uint32_t up = w[i] >> 8;
      qz[4 * i] = as_u32(__hsub2(as_half2(and_or(w[i], 0x000F000Fu, qtile::kMagic)), zz[even]));
      qz[4 * i + 1] = as_u32(__hfma2(as_half2(and_or(w[i], 0x00F000F0u, qtile::kMagic)), sixteenth,
                                     neg_z64[even + 1]));
      qz[4 * i + 2] = as_u32(__hsub2(as_half2(and_or(up, 0x000F000Fu, qtile::kMagic)), zz[even]));
      qz[4 * i + 3] = as_u32(
          __hfma2(as_half2(and_or(up, 0x00F000F0u, qtile::kMagic)), sixteenth, neg_z64[even + 1]));
    }
  } else {
    uint32_t pr[qtile::kPairs];
    qtile::decode_lane<B>(w, pr);
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      qz[p] = as_u32(__hsub2(as_half2(pr[p]), zz[qtile::pair_output_slot(p)]));
    }
  }
}

// One chunk from the lane's B words: decode, scale (the weight is then the reference
// dequantizer's fp16 value) and run the MMAs for MT tiles of 8 x rows. bf[mt]: the lane's B
// fragments of the chunk for x row 8·mt + g — {rows 2t, 2t + 1}, {2t + 8, 2t + 9}, {2t + 16,
// 2t + 17}, {2t + 24, 2t + 25} as half2.
template <int B, int MT>
__device__ __forceinline__ void chunk_mma(const uint32_t w[B], const uint32_t bf[MT][4],
                                          const __half2 sc[4], const __half2 zz[4],
                                          const __half2 neg_z64[4], float acc[2][MT][4]) {
  uint32_t qz[qtile::kPairs];
  chunk_codes<B>(w, zz, neg_z64, qz);
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      uint32_t a[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        const int p = (nt * 2 + ks) * 4 + r;
        a[r] = as_u32(__hmul2(as_half2(qz[p]), sc[qtile::pair_output_slot(p)]));
      }
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<__half>(acc[nt][mt], a, bf[mt][2 * ks], bf[mt][2 * ks + 1]);
      }
    }
  }
}

__device__ __forceinline__ void store_out(void* out, bool out_f32, int64_t at, float v) {
  if (out_f32) {
    static_cast<float*>(out)[at] = v;
  } else {
    static_cast<__half*>(out)[at] = __float2half_rn(v);
  }
}

// Σ p[s · stride] for s = 0 .. count − 1, added in slice order (the order both kernels share).
// The loads are issued sixteen at a time (the rest predicated), so that a column's sum over the
// usual 16 slices costs one round trip to L2, not two: it is on the step's critical path.
__device__ __forceinline__ float sum_slices(const float* p, int64_t stride, int count) {
  constexpr int kBatch = 16;
  float sum = 0.0f;
  for (int s = 0; s < count; s += kBatch) {
    float v[kBatch];
    const float* at = p + int64_t(s) * stride;  // one running address: few registers
#pragma unroll
    for (int i = 0; i < kBatch; ++i, at += stride) v[i] = s + i < count ? __ldcg(at) : 0.0f;
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (s + i < count) sum += v[i];
    }
  }
  return sum;
}

// Chunks per K slice, from the shape only (so results do not depend on the batch size): enough
// slices to fill the GPU several times over, as few as that allows (thresholds counted in tiles of
// 4 × 32 outputs, measured: 16-chunk slices for the gate/up/down shapes, 8 for q/o, 4 for k/v).
// The kernel sums the slices' fp32 partials in slice order.
inline int slice_chunks(const QuantMatrix& m) {
  const int64_t tile_columns = (m.blocks + 3) / 4;
  if (tile_columns * ((m.chunks + 15) / 16) >= 768) return 16;
  if (tile_columns * ((m.chunks + 7) / 8) >= 384) return 8;
  return 4;
}

inline bool valid_matrix(const QuantMatrix& m) {
  return m.qweight && m.chunk_line && m.chunk_info && m.row_src && m.chunks > 0 && m.blocks > 0 &&
         m.in_features > 0 && m.out_features > 0 && m.in_features < (int64_t(1) << 31) &&
         m.out_features < (int64_t(1) << 31) && m.max_bits >= 2 && m.max_bits <= 8 &&
         (m.kind == QuantKind::kExl2 ? (m.scale_codes && m.scale_max)
                                     : (m.scales && (m.kind != QuantKind::kGptqAsym || m.zeros)));
}

}  // namespace hearth::kernels::qchunk
