// Small exact helpers shared by the EXL2 and GPTQ decoders: reading b-bit codes from a
// little-endian bitstream of 32-bit words, and rounding a float to the nearest fp16 value.
#pragma once

#include <cstdint>
#include <cstring>

#include "engine/core/dtype.h"

namespace hearth::quant {

// The j-th b-bit value of a little-endian bitstream held in words[0..] (bits_at of
// docs/FORMATS.md §1.9). `stride` is the distance between consecutive words of the stream (a
// column of a [rows, N] tensor has stride N).
inline uint32_t bits_at(const uint32_t* words, int64_t stride, int bits, int64_t j) {
  const int64_t off = j * bits;
  const int64_t wi = off >> 5;
  const int sh = static_cast<int>(off & 31);
  uint64_t v = words[wi * stride] >> sh;
  if (sh + bits > 32) v |= static_cast<uint64_t>(words[(wi + 1) * stride]) << (32 - sh);
  return static_cast<uint32_t>(v) & ((1u << bits) - 1u);
}

// Reads consecutive b-bit values of a strided bitstream, touching exactly the words that hold
// them (ceil(count * b / 32) words for `count` values).
class BitReader {
 public:
  BitReader(const uint32_t* words, int64_t stride) : words_(words), stride_(stride) {}
  template <int B>
  uint32_t next() {
    if (have_ < B) {
      buffer_ |= static_cast<uint64_t>(*words_) << have_;
      words_ += stride_;
      have_ += 32;
    }
    const uint32_t v = static_cast<uint32_t>(buffer_) & ((1u << B) - 1u);
    buffer_ >>= B;
    have_ -= B;
    return v;
  }

 private:
  const uint32_t* words_;
  int64_t stride_;
  uint64_t buffer_ = 0;
  int have_ = 0;
};

// x rounded to the nearest fp16 value (ties to even), returned as float: the same result as
// half_to_float(float_to_half(x)), with a fast path for the normal fp16 range.
inline float round_to_half(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x38800000u && a < 0x477ff000u) {  // |x| in [2^-14, 65520): normal, no overflow
    u += 0x0fffu + ((u >> 13) & 1u);
    u &= 0xffffe000u;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
  }
  return half_to_float(float_to_half(x));
}

}  // namespace hearth::quant
