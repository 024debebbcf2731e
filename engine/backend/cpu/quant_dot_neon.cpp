// The AArch64 NEON kernel of quant_dot_outputs(). NEON is baseline on AArch64, so this file needs
// no extra flags and quant_dot.cpp calls it whenever it is built in (HEARTH_QUANT_DOT_NEON).
//
// The same design as the x86 body (quant_dot_simd.h): per block of 32 stored rows the codes are
// widened to 16-bit v = u − 128 (nibbles through their table), four vectors of 8; per row, v·q is
// multiplied into 32-bit lanes with widening multiply-accumulates (4 lanes per span), converted
// to fp32 and scaled by the span's scale times the block's d. Up to four rows decode the codes as
// they go; with more rows each output's codes are widened once into scratch.
#include <arm_neon.h>

#include <cstdint>

#include "engine/backend/cpu/quant_dot_kernels.h"
#include "engine/backend/cpu/quant_dot_loop.h"

namespace hearth::cpu {
namespace {

// One block of codes as 16-bit values: v[0], v[1] are rows 0–15, v[2], v[3] rows 16–31.
struct Block {
  int16x8_t v[4];
};

inline void widen_bytes(int8x16_t lo, int8x16_t hi, Block& out) {
  out.v[0] = vmovl_s8(vget_low_s8(lo));
  out.v[1] = vmovl_high_s8(lo);
  out.v[2] = vmovl_s8(vget_low_s8(hi));
  out.v[3] = vmovl_high_s8(hi);
}

// Block b of one output's codes. Nibbles (byte j of each 16 holds rows j, low, and j + 16, high)
// go through `table`, the weight's table already centred; bytes are centred by flipping their
// top bit, which turns u into the signed byte u − 128.
template <bool kNibbles>
inline void decode_block(const uint8_t* codes, int64_t b, uint8x16_t table, Block& out) {
  if constexpr (kNibbles) {
    const uint8x16_t v = vld1q_u8(codes + 16 * b);
    const uint8x16_t lo = vqtbl1q_u8(table, vandq_u8(v, vdupq_n_u8(0x0F)));
    const uint8x16_t hi = vqtbl1q_u8(table, vshrq_n_u8(v, 4));
    widen_bytes(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), out);
  } else {
    const uint8x16_t top = vdupq_n_u8(0x80);
    const uint8x16_t lo = veorq_u8(vld1q_u8(codes + 32 * b), top);
    const uint8x16_t hi = veorq_u8(vld1q_u8(codes + 32 * b + 16), top);
    widen_bytes(vreinterpretq_s8_u8(lo), vreinterpretq_s8_u8(hi), out);
  }
}

// The weight's nibble table with its values centred (u − 128), as bytes to reinterpret signed.
inline uint8x16_t centred_table(const QuantDotArgs& a) {
  return veorq_u8(vld1q_u8(a.lut), vdupq_n_u8(0x80));
}

// Adds Σ v·x over 16 rows to 4 lanes, 4 products per lane: |v| ≤ 128 and |x| ≤ 32767, so even
// a span of 32 (8 products per lane, below 2^25) cannot overflow.
inline int32x4_t add_products(int32x4_t acc, int16x8_t w0, int16x8_t w1, const int16_t* x) {
  const int16x8_t x0 = vld1q_s16(x);
  const int16x8_t x1 = vld1q_s16(x + 8);
  acc = vmlal_s16(acc, vget_low_s16(w0), vget_low_s16(x0));
  acc = vmlal_high_s16(acc, w0, x0);
  acc = vmlal_s16(acc, vget_low_s16(w1), vget_low_s16(x1));
  return vmlal_high_s16(acc, w1, x1);
}

// Adds block b of rows r0 .. r0 + kRows − 1 to acc.
template <int kSpan, int kRows>
inline void add_block(const QuantDotArgs& a, const Block& w, const float* scale, int64_t r0,
                      int64_t b, float32x4_t (&acc)[kRows]) {
  const int64_t blocks = a.stored_rows / 32;
  for (int i = 0; i < kRows; ++i) {
    const int64_t r = r0 + i;
    const int16_t* x = a.xq + r * a.stored_rows + 32 * b;
    const float d = a.xd[r * blocks + b];
    const int32x4_t zero = vdupq_n_s32(0);
    if constexpr (kSpan == 32) {
      const int32x4_t s =
          add_products(add_products(zero, w.v[0], w.v[1], x), w.v[2], w.v[3], x + 16);
      acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(s), scale[b] * d);
    } else {
      const int32x4_t lo = add_products(zero, w.v[0], w.v[1], x);
      const int32x4_t hi = add_products(zero, w.v[2], w.v[3], x + 16);
      acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(lo), scale[2 * b] * d);
      acc[i] = vfmaq_n_f32(acc[i], vcvtq_f32_s32(hi), scale[2 * b + 1] * d);
    }
  }
}

template <CodeSource kSource>
inline void block_codes(const uint8_t* codes, const int16_t* widened, int64_t b, uint8x16_t table,
                        Block& out) {
  if constexpr (kSource == CodeSource::kWidened) {
    for (int k = 0; k < 4; ++k) out.v[k] = vld1q_s16(widened + 32 * b + 8 * k);
  } else {
    decode_block<kSource == CodeSource::kNibbles>(codes, b, table, out);
  }
}

// out[i] = Σ over blocks of row r0 + i, without the offsets. Even and odd blocks go to separate
// accumulators so that their fma chains overlap.
template <int kSpan, int kRows, CodeSource kSource>
inline void dot_rows(const QuantDotArgs& a, const uint8_t* codes, const float* scale, int64_t r0,
                     float* out) {
  const int64_t blocks = a.stored_rows / 32;
  const uint8x16_t table = centred_table(a);
  float32x4_t even[kRows], odd[kRows];
  for (int i = 0; i < kRows; ++i) even[i] = odd[i] = vdupq_n_f32(0.0f);
  Block w;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    block_codes<kSource>(codes, a.scratch, b, table, w);
    add_block<kSpan, kRows>(a, w, scale, r0, b, even);
    block_codes<kSource>(codes, a.scratch, b + 1, table, w);
    add_block<kSpan, kRows>(a, w, scale, r0, b + 1, odd);
  }
  if (b < blocks) {
    block_codes<kSource>(codes, a.scratch, b, table, w);
    add_block<kSpan, kRows>(a, w, scale, r0, b, even);
  }
  for (int i = 0; i < kRows; ++i) out[i] = vaddvq_f32(vaddq_f32(even[i], odd[i]));
}

// Every block of one output's codes as 16-bit values.
inline void widen_codes(const QuantDotArgs& a, const uint8_t* codes, int16_t* out) {
  const uint8x16_t table = centred_table(a);
  for (int64_t b = 0; b < a.stored_rows / 32; ++b) {
    Block w;
    if (a.nibbles) {
      decode_block<true>(codes, b, table, w);
    } else {
      decode_block<false>(codes, b, table, w);
    }
    for (int k = 0; k < 4; ++k) vst1q_s16(out + 32 * b + 8 * k, w.v[k]);
  }
}

// Σ over spans of offset · sums, for one row.
inline float offset_term(const float* offset, const float* sums, int64_t spans) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  int64_t s = 0;
  for (; s + 4 <= spans; s += 4) acc = vfmaq_f32(acc, vld1q_f32(offset + s), vld1q_f32(sums + s));
  float total = vaddvq_f32(acc);
  for (; s < spans; ++s) total += offset[s] * sums[s];
  return total;
}

// The Kernel of quant_dot_loop.h.
struct NeonKernel {
  template <int kSpan, int kRows, CodeSource kSource>
  static void rows(const QuantDotArgs& a, const uint8_t* codes, const float* scale, int64_t r0,
                   float* out) {
    dot_rows<kSpan, kRows, kSource>(a, codes, scale, r0, out);
  }
  static void widen(const QuantDotArgs& a, const uint8_t* codes, int16_t* out) {
    widen_codes(a, codes, out);
  }
  static float offsets(const float* offset, const float* sums, int64_t spans) {
    return offset_term(offset, sums, spans);
  }
};

}  // namespace

void quant_dot_neon(const QuantDotArgs& a) {
  dot_outputs<NeonKernel>(a);
}

}  // namespace hearth::cpu
