// Device side of the quantized KV cache (the bits are defined by the CPU reference,
// engine/backend/kv_cache_quant.h): the Walsh-Hadamard rotation over a lane group, and the
// codes of a row as the lanes hold them. A lane group is D/8 consecutive lanes of a warp, lane
// gl holding dims 8·gl .. 8·gl + 7 of one row; the 4 lanes gl = 4g .. 4g + 3 hold scale group g.
#pragma once

#include <cmath>
#include <type_traits>

#include "kernels/common.cuh"

namespace hearth::kernels {

constexpr int kKvGroup = 32;  // values per scale

// x ← H·x over the lane group's D values, in the reference's order: butterflies of stride 1,
// 2, 4 inside the lane, then 8·m with lane gl ^ m, then the product with norm (1/√D).
template <int kLanes>
__device__ __forceinline__ void hadamard8(float x[8], int gl, float norm) {
#pragma unroll
  for (int h = 1; h < 8; h *= 2) {
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      if ((j & h) == 0) {
        const float a = x[j];
        const float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
#pragma unroll
  for (int m = 1; m < kLanes; m *= 2) {
    const bool upper = (gl & m) != 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float other = __shfl_xor_sync(0xffffffffu, x[j], m);
      x[j] = upper ? other - x[j] : x[j] + other;
    }
  }
#pragma unroll
  for (int j = 0; j < 8; ++j) x[j] *= norm;
}

// A key row's lane takes its head's key offset (KvLayerView::key_offsets) from its 8 rotated
// values: one float subtraction each, as the CPU reference does.
template <int D>
__device__ __forceinline__ void subtract_key_offset(float x[8], const float* key_offsets, int head,
                                                    int gl) {
  if (key_offsets == nullptr) return;
  const float4* mu = reinterpret_cast<const float4*>(key_offsets + head * D + gl * 8);
  const float4 a = mu[0], b = mu[1];
  x[0] -= a.x, x[1] -= a.y, x[2] -= a.z, x[3] -= a.w;
  x[4] -= b.x, x[5] -= b.y, x[6] -= b.z, x[7] -= b.w;
}

// Bytes of one row's codes.
template <int BITS, int D>
constexpr int kv_row_bytes() {
  return D * BITS / 8;
}

// A lane's 8 codes: q8 in .x/.y (byte j of the 8), q4 in .x (nibble j), q6 low nibbles in .x and
// the high 2-bit pairs in the low 16 bits of .y.
template <int BITS, int D>
__device__ __forceinline__ uint2 load_codes(const uint8_t* row, int gl) {
  if constexpr (BITS == 8) {
    return *reinterpret_cast<const uint2*>(row + gl * 8);
  } else if constexpr (BITS == 4) {
    return make_uint2(*reinterpret_cast<const uint32_t*>(row + gl * 4), 0u);
  } else {
    return make_uint2(*reinterpret_cast<const uint32_t*>(row + gl * 4),
                      *reinterpret_cast<const uint16_t*>(row + D / 2 + gl * 2));
  }
}

template <int BITS>
__device__ __forceinline__ int code_of(uint2 c, int j) {
  if constexpr (BITS == 8) return ((j < 4 ? c.x : c.y) >> (8 * (j & 3))) & 255;
  if constexpr (BITS == 4) return (c.x >> (4 * j)) & 15;
  return ((c.x >> (4 * j)) & 15) | (((c.y >> (2 * j)) & 3) << 4);
}

// q4's level of u = c - 7.5, in units of the scale: u · (3/4 + 5u²/1024), as kv_q4_level in
// the reference. Every intermediate is exact in fp32, so any contraction gives the same bits.
__host__ __device__ __forceinline__ constexpr float q4_level(float u) {
  return u * (0.75f + 0.0048828125f * (u * u));
}

// The midpoints between q4's positive levels q4_level(0.5) .. q4_level(7.5).
template <int I>
__device__ __forceinline__ constexpr float q4_midpoint() {
  return 0.5f * (q4_level(I + 0.5f) + q4_level(I + 1.5f));
}

// A lane's 8 codes as floats v with value (v - kv_code_offset<BITS>()) · scale: q8 and q6 give
// the code itself (0 .. 2^b - 1), its offset taken once per sum by the caller; q4 gives its
// level (offset 0). No integer-to-float conversions (a slow instruction): the code is put into
// the mantissa of 2^23 (q4: 2c + 1 into that of 2^22, which reads c + 0.5) and the power taken
// off.
template <int BITS>
__device__ __forceinline__ void codes8(uint2 c, float out[8]) {
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if constexpr (BITS == 8) {
      // Byte j & 3 of the word, two zero bytes and 0x4B of 0x4B000000 (selector 0x754j).
      const uint32_t bits = __byte_perm(j < 4 ? c.x : c.y, 0x4B000000u, (j & 3) | 0x7540);
      out[j] = __int_as_float(bits) - 8388608.0f;
    } else if constexpr (BITS == 4) {
      const uint32_t bits = 0x4A800001u | ((c.x >> (4 * j) << 1) & 30u);
      out[j] = q4_level(__int_as_float(bits) - 4194312.0f);  // 2^22 + c + 0.5 - (2^22 + 8)
    } else {
      const uint32_t bits = 0x4B000000u | ((c.x >> (4 * j)) & 15u) | (((c.y >> (2 * j)) & 3u) << 4);
      out[j] = __int_as_float(bits) - 8388608.0f;
    }
  }
}

// The value of code c is (c - kv_code_offset<BITS>()) · scale for q8 and q6; q4's codes8 gives
// levels, whose offset is 0.
template <int BITS>
constexpr float kv_code_offset() {
  return BITS == 4 ? 0.0f : static_cast<float>(1 << (BITS - 1)) - 0.5f;
}

template <int BITS>
__device__ __forceinline__ void dequant8(uint2 c, float scale, float out[8]) {
  constexpr int kHalf = 1 << (BITS - 1);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    if constexpr (BITS == 4) {
      out[j] = q4_level(static_cast<float>(code_of<BITS>(c, j) - kHalf) + 0.5f) * scale;
    } else {
      out[j] = (static_cast<float>(code_of<BITS>(c, j) - kHalf) + 0.5f) * scale;
    }
  }
}

// q4's code of y = x · (1/s), as the reference: 8 + k for y ≥ 0 and 7 - k below, k being how
// many midpoints |y| reaches (NaN gives 8).
__device__ __forceinline__ uint32_t q4_code(float y) {
  const float a = fabsf(y);
  uint32_t k = (a >= q4_midpoint<0>()) + (a >= q4_midpoint<1>()) + (a >= q4_midpoint<2>()) +
               (a >= q4_midpoint<3>()) + (a >= q4_midpoint<4>()) + (a >= q4_midpoint<5>()) +
               (a >= q4_midpoint<6>());
  return y < 0.0f ? 7u - k : 8u + k;
}

// A lane's 8 rotated values quantized with its scale group (4 lanes). Every lane of the warp
// must call it (shuffles).
struct Codes8 {
  uint32_t lo = 0, hi = 0;  // as load_codes returns them
  __half scale;
};
template <int BITS>
__device__ __forceinline__ Codes8 quantize8(const float x[8]) {
  constexpr int kHalf = 1 << (BITS - 1);
  constexpr float kTop = static_cast<float>((1 << BITS) - 1);
  float max_abs = 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) max_abs = fmaxf(max_abs, fabsf(x[j]));
  max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 1));
  max_abs = fmaxf(max_abs, __shfl_xor_sync(0xffffffffu, max_abs, 2));
  Codes8 c;
  c.scale = __float2half_ru(fminf(max_abs / static_cast<float>(kHalf), 65504.0f));
  const float s = __half2float(c.scale);
  const float inv = s > 0.0f ? 1.0f / s : 0.0f;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float f = __fmul_rn(x[j], inv);  // rounded as the reference's product
    uint32_t code;
    if constexpr (BITS == 4) {
      code = q4_code(f);
    } else {
      code = static_cast<uint32_t>(fminf(fmaxf(floorf(f) + static_cast<float>(kHalf), 0.0f), kTop));
    }
    if constexpr (BITS == 8) {
      if (j < 4) {
        c.lo |= code << (8 * j);
      } else {
        c.hi |= code << (8 * (j - 4));
      }
    } else {
      c.lo |= (code & 15u) << (4 * j);
      if constexpr (BITS == 6) c.hi |= (code >> 4) << (2 * j);
    }
  }
  return c;
}

template <int BITS, int D>
__device__ __forceinline__ void store_codes(const Codes8& c, int gl, uint8_t* row, __half* scales) {
  if constexpr (BITS == 8) {
    *reinterpret_cast<uint2*>(row + gl * 8) = make_uint2(c.lo, c.hi);
  } else {
    *reinterpret_cast<uint32_t*>(row + gl * 4) = c.lo;
    if constexpr (BITS == 6) *reinterpret_cast<uint16_t*>(row + D / 2 + gl * 2) = uint16_t(c.hi);
  }
  if ((gl & 3) == 0) scales[gl / 4] = c.scale;
}

// Where row (page, kv head, slot) of a quantized layer view lies: its codes and its scales.
struct KvQuantRow {
  uint8_t* codes;
  __half* scales;
};
template <int BITS, int D>
__device__ __forceinline__ KvQuantRow kv_quant_row(const KvLayerView& kv, int64_t page, int kv_head,
                                                   int slot, bool is_value) {
  uint8_t* block = static_cast<uint8_t*>(kv.base) + page * kv.page_stride;
  const int64_t row = int64_t(kv_head) * kv.page_size + slot;
  return {block + (is_value ? kv.v_offset : 0) + row * kv_row_bytes<BITS, D>(),
          reinterpret_cast<__half*>(block + (is_value ? kv.v_scales : kv.k_scales)) +
              row * (D / kKvGroup)};
}

// The fp16 key of a sequence's first position, kv head `kv_head`, in its first page.
template <int D>
__device__ __forceinline__ __half* first_key_row(const KvLayerView& kv, int64_t page, int kv_head) {
  uint8_t* block = static_cast<uint8_t*>(kv.base) + page * kv.page_stride;
  return reinterpret_cast<__half*>(block + kv.first_keys) + int64_t(kv_head) * D;
}

// Runs the statement with constexpr ints BITS (8/6/4) and D (64/128) set from the view; any
// other view gives cudaErrorInvalidValue.
#define HEARTH_DISPATCH_KV_QUANT(kv, BITS, D, ...)                               \
  do {                                                                           \
    auto hearth_kv_dim_ = [&](auto bits_) -> cudaError_t {                       \
      constexpr int BITS = decltype(bits_)::value;                               \
      if ((kv).head_dim == 64) {                                                 \
        constexpr int D = 64;                                                    \
        __VA_ARGS__;                                                             \
      }                                                                          \
      if ((kv).head_dim == 128) {                                                \
        constexpr int D = 128;                                                   \
        __VA_ARGS__;                                                             \
      }                                                                          \
      return cudaErrorInvalidValue;                                              \
    };                                                                           \
    if ((kv).bits == 8) return hearth_kv_dim_(std::integral_constant<int, 8>{}); \
    if ((kv).bits == 6) return hearth_kv_dim_(std::integral_constant<int, 6>{}); \
    if ((kv).bits == 4) return hearth_kv_dim_(std::integral_constant<int, 4>{}); \
    return cudaErrorInvalidValue;                                                \
  } while (0)

cudaError_t kv_store_quantized(const Launch& l, Elem t, const void* k, const void* v,
                               const BatchView& batch, const KvLayerView& kv);

cudaError_t attention_decode_quantized(const Launch& l, Elem t, const void* q, const void* k,
                                       const void* v, const BatchView& batch, const KvLayerView& kv,
                                       int num_heads, float scale, void* out,
                                       const DecodeScratch& scratch, const DecodeShape& shape,
                                       const DecodeRope& rope);

// 1/√D as the reference computes it.
inline float hadamard_norm(int head_dim) {
  return 1.0f / sqrtf(static_cast<float>(head_dim));
}

}  // namespace hearth::kernels
