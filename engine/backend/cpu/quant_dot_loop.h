// The loops around the SIMD kernels of quant_dot_outputs(), shared by the x86 body
// (quant_dot_simd.h) and the NEON file: per output, the codes are decoded block by block as the
// rows go (up to four rows) or widened once into scratch (more rows), and the rows come four at
// a time so that a block of codes serves all four. Each instruction set supplies a Kernel with
//   template <int kSpan, int kRows, CodeSource kSource>
//   static void rows(const QuantDotArgs&, const uint8_t* codes, const float* scale, int64_t r0,
//                    float* out);  // out[i] = Σ over blocks of row r0 + i, offsets left out
//   static void widen(const QuantDotArgs&, const uint8_t* codes, int16_t* out);
//   static float offsets(const float* offset, const float* sums, int64_t spans);
// Internal linkage only, as for the kernels: each instruction set's file instantiates its own.
#pragma once

#include <cstdint>

#include "engine/backend/cpu/quant_dot_kernels.h"

namespace hearth::cpu {
namespace {

// Where a kernel reads an output's codes: decoded block by block from nibbles or bytes (a few
// rows), or widened once into 16-bit values (many rows, which then share one decoding).
enum class CodeSource { kNibbles, kBytes, kWidened };

template <class Kernel, int kSpan, CodeSource kSource>
inline void dot_some_rows(const QuantDotArgs& a, const uint8_t* codes, const float* scale,
                          int64_t r0, int64_t rows, float* out) {
  switch (rows) {
    case 1:
      return Kernel::template rows<kSpan, 1, kSource>(a, codes, scale, r0, out);
    case 2:
      return Kernel::template rows<kSpan, 2, kSource>(a, codes, scale, r0, out);
    case 3:
      return Kernel::template rows<kSpan, 3, kSource>(a, codes, scale, r0, out);
    default:
      return Kernel::template rows<kSpan, 4, kSource>(a, codes, scale, r0, out);
  }
}

template <class Kernel, int kSpan>
inline void dot_span_rows(const QuantDotArgs& a, CodeSource source, const uint8_t* codes,
                          const float* scale, int64_t r0, int64_t rows, float* out) {
  switch (source) {
    case CodeSource::kNibbles:
      return dot_some_rows<Kernel, kSpan, CodeSource::kNibbles>(a, codes, scale, r0, rows, out);
    case CodeSource::kBytes:
      return dot_some_rows<Kernel, kSpan, CodeSource::kBytes>(a, codes, scale, r0, rows, out);
    case CodeSource::kWidened:
      return dot_some_rows<Kernel, kSpan, CodeSource::kWidened>(a, codes, scale, r0, rows, out);
  }
}

template <class Kernel>
void dot_outputs(const QuantDotArgs& a) {
  const int64_t spans = a.stored_rows / a.span_rows;
  CodeSource source = CodeSource::kWidened;
  if (a.rows <= 4) source = a.nibbles ? CodeSource::kNibbles : CodeSource::kBytes;
  for (int64_t n = a.n0; n < a.n1; ++n) {
    const uint8_t* codes = a.codes + n * a.code_stride;
    if (source == CodeSource::kWidened) Kernel::widen(a, codes, a.scratch);
    const float* scale = a.scales + n * spans;
    const float* offset = a.offsets ? a.offsets + n * spans : nullptr;
    for (int64_t r0 = 0; r0 < a.rows; r0 += 4) {
      const int64_t rows = a.rows - r0 < 4 ? a.rows - r0 : 4;
      float out[4];
      if (a.span_rows == 32) {
        dot_span_rows<Kernel, 32>(a, source, codes, scale, r0, rows, out);
      } else {
        dot_span_rows<Kernel, 16>(a, source, codes, scale, r0, rows, out);
      }
      for (int64_t i = 0; i < rows; ++i) {
        const int64_t r = r0 + i;
        const float extra = offset ? Kernel::offsets(offset, a.xsums + r * spans, spans) : 0.0f;
        a.y[r * a.ldy + n] = out[i] + extra;
      }
    }
  }
}

}  // namespace
}  // namespace hearth::cpu
