// The body of the SIMD kernels of quant_dot_outputs(), included by quant_dot_avx2.cpp (kVnni =
// false: madd) and quant_dot_avx512_vnni.cpp (kVnni = true: dpwssd), each compiled for its
// instruction set. Internal linkage only: nothing here may be shared with other files.
//
// Per block of 32 stored rows, the codes are widened to 16-bit v = u − 128 (nibbles through
// their table); per row, v·q in 16-bit pairs gives 8 lanes of sums for each half of the block
// (its two spans of 16), converted to fp32 and scaled by the span's scale times the block's d.
// Rows come four at a time so that a block of codes is decoded once for all four; with more
// rows each output's codes are widened once into scratch and read back per group of four.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "engine/backend/cpu/quant_dot_kernels.h"
#include "engine/backend/cpu/quant_dot_loop.h"

namespace hearth::cpu {
namespace {

inline float horizontal_sum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_add_ps(lo, _mm_movehl_ps(lo, lo));
  lo = _mm_add_ss(lo, _mm_shuffle_ps(lo, lo, 1));
  return _mm_cvtss_f32(lo);
}

// Block b (32 stored rows) of one output's codes as 16-bit v = u − 128: rows 0–15 in lo, 16–31
// in hi. Nibbles (byte j of each 16 holds rows j, low, and j + 16, high) go through `table`,
// the weight's table already centred; bytes are centred by flipping their top bit.
template <bool kNibbles>
inline void decode_block(const uint8_t* codes, int64_t b, __m128i table, __m256i& lo, __m256i& hi) {
  __m128i l, h;
  if constexpr (kNibbles) {
    const __m128i low = _mm_set1_epi8(0x0F);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 16 * b));
    l = _mm_shuffle_epi8(table, _mm_and_si128(v, low));
    h = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(v, 4), low));
  } else {
    const __m128i top = _mm_set1_epi8(static_cast<char>(0x80));
    l = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 32 * b)), top);
    h = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 32 * b + 16)), top);
  }
  lo = _mm256_cvtepi8_epi16(l);
  hi = _mm256_cvtepi8_epi16(h);
}

// The weight's nibble table with its values centred (u − 128), as signed bytes.
inline __m128i centred_table(const QuantDotArgs& a) {
  return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.lut)),
                       _mm_set1_epi8(static_cast<char>(0x80)));
}

// Sums of 16-bit products in pairs (8 lanes): |v| ≤ 128 and |q| ≤ 32767, so no lane overflows,
// nor the sum of two.
inline __m256i pair_sums(__m256i w, __m256i x) {
  return _mm256_madd_epi16(w, x);
}
template <bool kVnni>
inline __m256i add_pair_sums(__m256i acc, __m256i w, __m256i x) {
  if constexpr (kVnni) {
    return _mm256_dpwssd_epi32(acc, w, x);
  } else {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(w, x));
  }
}

inline __m256i load16(const int16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Adds block b of rows r0 .. r0 + kRows − 1 to acc.
template <bool kVnni, int kSpan, int kRows>
inline void add_block(const QuantDotArgs& a, __m256i w_lo, __m256i w_hi, const float* scale,
                      int64_t r0, int64_t b, __m256 (&acc)[kRows]) {
  const int64_t blocks = a.stored_rows / 32;
  for (int i = 0; i < kRows; ++i) {
    const int64_t r = r0 + i;
    const int16_t* x = a.xq + r * a.stored_rows + 32 * b;
    const float d = a.xd[r * blocks + b];
    if constexpr (kSpan == 32) {
      const __m256i s = add_pair_sums<kVnni>(pair_sums(w_lo, load16(x)), w_hi, load16(x + 16));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_set1_ps(scale[b] * d), acc[i]);
    } else {
      const __m256i lo = pair_sums(w_lo, load16(x));
      const __m256i hi = pair_sums(w_hi, load16(x + 16));
      acc[i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(lo), _mm256_set1_ps(scale[2 * b] * d), acc[i]);
      acc[i] =
          _mm256_fmadd_ps(_mm256_cvtepi32_ps(hi), _mm256_set1_ps(scale[2 * b + 1] * d), acc[i]);
    }
  }
}

template <CodeSource kSource>
inline void block_codes(const uint8_t* codes, const int16_t* widened, int64_t b, __m128i table,
                        __m256i& lo, __m256i& hi) {
  if constexpr (kSource == CodeSource::kWidened) {
    lo = load16(widened + 32 * b);
    hi = load16(widened + 32 * b + 16);
  } else {
    decode_block<kSource == CodeSource::kNibbles>(codes, b, table, lo, hi);
  }
}

// out[i] = Σ over blocks of row r0 + i, without the offsets. Even and odd blocks go to separate
// accumulators so that their fma chains overlap.
template <bool kVnni, int kSpan, int kRows, CodeSource kSource>
inline void dot_rows(const QuantDotArgs& a, const uint8_t* codes, const int16_t* widened,
                     const float* scale, int64_t r0, float* out) {
  const int64_t blocks = a.stored_rows / 32;
  const __m128i table = centred_table(a);
  __m256 even[kRows], odd[kRows];
  for (int i = 0; i < kRows; ++i) even[i] = odd[i] = _mm256_setzero_ps();
  __m256i lo, hi;
  int64_t b = 0;
  for (; b + 2 <= blocks; b += 2) {
    block_codes<kSource>(codes, widened, b, table, lo, hi);
    add_block<kVnni, kSpan, kRows>(a, lo, hi, scale, r0, b, even);
    block_codes<kSource>(codes, widened, b + 1, table, lo, hi);
    add_block<kVnni, kSpan, kRows>(a, lo, hi, scale, r0, b + 1, odd);
  }
  if (b < blocks) {
    block_codes<kSource>(codes, widened, b, table, lo, hi);
    add_block<kVnni, kSpan, kRows>(a, lo, hi, scale, r0, b, even);
  }
  for (int i = 0; i < kRows; ++i) out[i] = horizontal_sum(_mm256_add_ps(even[i], odd[i]));
}

// Every block of one output's codes as 16-bit values.
inline void widen_codes(const QuantDotArgs& a, const uint8_t* codes, int16_t* out) {
  const __m128i table = centred_table(a);
  for (int64_t b = 0; b < a.stored_rows / 32; ++b) {
    __m256i lo, hi;
    if (a.nibbles) {
      decode_block<true>(codes, b, table, lo, hi);
    } else {
      decode_block<false>(codes, b, table, lo, hi);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * b), lo);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 32 * b + 16), hi);
  }
}

// Σ over spans of offset · sums, for one row.
inline float offset_term(const float* offset, const float* sums, int64_t spans) {
  __m256 acc = _mm256_setzero_ps();
  int64_t s = 0;
  for (; s + 8 <= spans; s += 8) {
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(offset + s), _mm256_loadu_ps(sums + s), acc);
  }
  float total = horizontal_sum(acc);
  for (; s < spans; ++s) total += offset[s] * sums[s];
  return total;
}

// The Kernel of quant_dot_loop.h.
template <bool kVnni>
struct X86Kernel {
  template <int kSpan, int kRows, CodeSource kSource>
  static void rows(const QuantDotArgs& a, const uint8_t* codes, const float* scale, int64_t r0,
                   float* out) {
    dot_rows<kVnni, kSpan, kRows, kSource>(a, codes, a.scratch, scale, r0, out);
  }
  static void widen(const QuantDotArgs& a, const uint8_t* codes, int16_t* out) {
    widen_codes(a, codes, out);
  }
  static float offsets(const float* offset, const float* sums, int64_t spans) {
    return offset_term(offset, sums, spans);
  }
};

template <bool kVnni>
void simd_dot_outputs(const QuantDotArgs& a) {
  dot_outputs<X86Kernel<kVnni>>(a);
}

}  // namespace
}  // namespace hearth::cpu
