#include "engine/io/gguf_block_weight.h"

#include <cstring>

#include "engine/core/dtype.h"
#include "engine/core/error.h"
#include "engine/io/gguf_dequant.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace hearth {

bool gguf_type_is_packed(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
    case GgmlType::kQ4_1:
    case GgmlType::kQ5_0:
    case GgmlType::kQ5_1:
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
      return ggml_can_dequantize(type);
    default:
      return false;
  }
}

int gguf_symmetric_code_bits(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return 4;
    case GgmlType::kQ5_0:
      return 5;
    case GgmlType::kQ8_0:
      return 8;
    default:
      return 0;
  }
}

GgufBlockWeight::GgufBlockWeight(std::shared_ptr<const GgufFile> gguf, const GgufTensorInfo& tensor,
                                 std::vector<int32_t> row_order)
    : gguf_(std::move(gguf)), type_(tensor.type), row_order_(std::move(row_order)) {
  HEARTH_CHECK(tensor.dims.size() == 2 && gguf_type_is_packed(tensor.type),
               "GgufBlockWeight needs a 2-D block-quantized tensor");
  const auto traits = ggml_type_traits(static_cast<uint32_t>(tensor.type));
  HEARTH_CHECK(traits.has_value(), "unknown ggml type");
  in_ = tensor.dims[0];
  out_ = tensor.dims[1];
  row_bytes_ = static_cast<size_t>(in_ / traits->block_elements) * traits->block_bytes;
  bits_ = 8.0 * traits->block_bytes / traits->block_elements;
  const std::span<const std::byte> raw = gguf_->raw_data(tensor);
  HEARTH_CHECK(raw.size() == row_bytes_ * static_cast<size_t>(out_), "GGUF tensor size");
  data_ = raw.data();
  HEARTH_CHECK(row_order_.empty() || static_cast<int64_t>(row_order_.size()) == out_,
               "row order size");
}

namespace {

// ggml's Q8_0 / Q4_0 / Q4_1 / Q5_0 blocks of 32: an fp16 scale (and min, or Q5_0's 32 fifth
// bits), then the codes.
constexpr size_t kQ8_0Bytes = 34, kQ4_0Bytes = 18, kQ4_1Bytes = 20, kQ5_0Bytes = 22;

float load_half(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return half_to_float(h);
}

#if defined(__x86_64__)
// The same products and sums as ggml's reference dequantizers (multiply, then add: no FMA), on
// 8 lanes at a time.
__attribute__((target("avx2"))) void q8_0_row(const std::byte* src, float* dst, int64_t n) {
  for (int64_t b = 0; b < n / 32; ++b, src += kQ8_0Bytes, dst += 32) {
    const __m256 d = _mm256_set1_ps(load_half(src));
    const auto* q = reinterpret_cast<const int8_t*>(src + 2);
    for (int i = 0; i < 32; i += 8) {
      const __m128i bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + i));
      const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(bytes));
      _mm256_storeu_ps(dst + i, _mm256_mul_ps(v, d));
    }
  }
}

// Q4_0: value j (low nibbles: j < 16, high: j >= 16) = (nibble - 8) * d.
// Q4_1: value = nibble * d + m.
template <bool kHasMin>
__attribute__((target("avx2"))) void q4_row(const std::byte* src, float* dst, int64_t n) {
  const size_t block = kHasMin ? kQ4_1Bytes : kQ4_0Bytes;
  const __m128i low_mask = _mm_set1_epi8(0x0f);
  for (int64_t b = 0; b < n / 32; ++b, src += block, dst += 32) {
    const __m256 d = _mm256_set1_ps(load_half(src));
    const __m256 m = kHasMin ? _mm256_set1_ps(load_half(src + 2)) : _mm256_setzero_ps();
    const auto* qs = reinterpret_cast<const __m128i*>(src + (kHasMin ? 4 : 2));
    const __m128i packed = _mm_loadu_si128(qs);
    const __m128i lo = _mm_and_si128(packed, low_mask);
    const __m128i hi = _mm_and_si128(_mm_srli_epi16(packed, 4), low_mask);
    const __m128i halves[2] = {lo, hi};
    for (int h = 0; h < 2; ++h) {
      for (int i = 0; i < 16; i += 8) {
        const __m128i part = i == 0 ? halves[h] : _mm_srli_si128(halves[h], 8);
        __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(part));
        if (!kHasMin) v = _mm256_sub_ps(v, _mm256_set1_ps(8.0f));
        v = _mm256_mul_ps(v, d);
        if (kHasMin) v = _mm256_add_ps(v, m);
        _mm256_storeu_ps(dst + h * 16 + i, v);
      }
    }
  }
}

bool has_avx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2");
}
const bool kAvx2 = has_avx2();
#endif

void dequantize_row(GgmlType type, const std::byte* src, float* dst, int64_t n) {
#if defined(__x86_64__)
  if (kAvx2) {
    switch (type) {
      case GgmlType::kQ8_0:
        return q8_0_row(src, dst, n);
      case GgmlType::kQ4_0:
        return q4_row<false>(src, dst, n);
      case GgmlType::kQ4_1:
        return q4_row<true>(src, dst, n);
      default:
        break;
    }
  }
#endif
  dequantize_ggml(type, src, dst, n);
}

}  // namespace

void GgufBlockWeight::symmetric_codes(int64_t n, uint8_t* codes, uint16_t* scales) const {
  const int bits = symmetric_code_bits();
  HEARTH_CHECK(bits > 0, "symmetric_codes: not a Q4_0, Q5_0 or Q8_0 tensor");
  const int64_t stored = row_order_.empty() ? n : row_order_[static_cast<size_t>(n)];
  const size_t block_bytes = bits == 4 ? kQ4_0Bytes : bits == 5 ? kQ5_0Bytes : kQ8_0Bytes;
  const std::byte* block = data_ + static_cast<size_t>(stored) * row_bytes_;
  for (int64_t b = 0; b < in_ / 32; ++b, block += block_bytes, codes += 32) {
    std::memcpy(&scales[b], block, 2);
    const auto* q = reinterpret_cast<const uint8_t*>(block + 2);
    if (bits == 8) {  // signed bytes: s + 128 flips the sign bit
      for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(q[j] ^ 0x80u);
      continue;
    }
    uint32_t high = 0;  // Q5_0: bit j is value j's fifth bit, then the nibbles follow
    if (bits == 5) {
      std::memcpy(&high, q, 4);
      q += 4;
    }
    for (int j = 0; j < 16; ++j) {
      codes[j] = static_cast<uint8_t>((q[j] & 0x0Fu) | (((high >> j) & 1u) << 4));
      codes[j + 16] = static_cast<uint8_t>((q[j] >> 4) | (((high >> (j + 16)) & 1u) << 4));
    }
  }
}

void GgufBlockWeight::dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const {
  for (int64_t n = n_begin; n < n_end; ++n) {
    const int64_t stored = row_order_.empty() ? n : row_order_[static_cast<size_t>(n)];
    dequantize_row(type_, data_ + static_cast<size_t>(stored) * row_bytes_,
                   out + (n - n_begin) * in_, in_);
  }
}

}  // namespace hearth
