#include "engine/io/gguf_block_weight.h"

#include <algorithm>
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
    case GgmlType::kQ2_K:
    case GgmlType::kQ3_K:
    case GgmlType::kQ4_K:
    case GgmlType::kQ5_K:
    case GgmlType::kQ6_K:
    case GgmlType::kIQ4_NL:
    case GgmlType::kIQ4_XS:
      return ggml_can_dequantize(type);
    default:
      return false;
  }
}

GgufCodeForm gguf_code_form(GgmlType type) {
  switch (type) {
    case GgmlType::kQ4_0:
      return {4, 8, 32, false};
    case GgmlType::kQ5_0:
      return {5, 16, 32, false};
    case GgmlType::kQ8_0:
      return {8, 128, 32, false};
    case GgmlType::kQ4_1:
      return {4, 0, 32, true};
    case GgmlType::kQ5_1:
      return {5, 0, 32, true};
    case GgmlType::kQ2_K:
      return {2, 0, 256, true, true};
    case GgmlType::kQ3_K:
      return {3, 4, 256, false, true};
    case GgmlType::kQ4_K:
      return {4, 0, 256, true};
    case GgmlType::kQ5_K:
      return {5, 0, 256, true};
    case GgmlType::kQ6_K:
      return {6, 32, 256, false, true};
    // The codebook's values as 8-bit codes around 128.
    case GgmlType::kIQ4_NL:
      return {8, 128, 32, false, false, true};
    case GgmlType::kIQ4_XS:
      return {8, 128, 256, false, false, true};
    default:
      return {};
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

// ggml's Q8_0 / Q4_0 / Q4_1 blocks of 32: an fp16 scale (and min), then the codes.
constexpr size_t kQ8_0Bytes = 34, kQ4_0Bytes = 18, kQ4_1Bytes = 20;

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

uint16_t half_bits_at(const std::byte* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// The 6-bit scale and min of Q4_K/Q5_K sub-block j (0..7) from the block's 12 packed bytes (as
// dequantize_ggml reads them).
void k4_scale_min(const uint8_t* q, int j, int8_t* sc, int8_t* m) {
  if (j < 4) {
    *sc = static_cast<int8_t>(q[j] & 63);
    *m = static_cast<int8_t>(q[j + 4] & 63);
  } else {
    *sc = static_cast<int8_t>((q[j + 4] & 0x0F) | ((q[j - 4] >> 6) << 4));
    *m = static_cast<int8_t>((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
  }
}

// Blocks of 32: Q4_0, Q4_1, Q5_0, Q5_1 (low nibbles are values 0..15, high nibbles 16..31, Q5's
// fifth bits in a u32 before them) and Q8_0.
void legacy_block(GgmlType type, const std::byte* b, uint8_t* codes, uint16_t* d, uint16_t* dmin) {
  *d = half_bits_at(b);
  const bool with_min = type == GgmlType::kQ4_1 || type == GgmlType::kQ5_1;
  *dmin = with_min ? half_bits_at(b + 2) : uint16_t{0};
  const auto* q = reinterpret_cast<const uint8_t*>(b + (with_min ? 4 : 2));
  if (type == GgmlType::kQ8_0) {  // signed bytes: s + 128 flips the sign bit
    for (int j = 0; j < 32; ++j) codes[j] = static_cast<uint8_t>(q[j] ^ 0x80u);
    return;
  }
  uint32_t high = 0;  // Q5: bit j is value j's fifth bit
  if (type == GgmlType::kQ5_0 || type == GgmlType::kQ5_1) {
    std::memcpy(&high, q, 4);
    q += 4;
  }
  for (int j = 0; j < 16; ++j) {
    codes[j] = static_cast<uint8_t>((q[j] & 0x0Fu) | (((high >> j) & 1u) << 4));
    codes[j + 16] = static_cast<uint8_t>((q[j] >> 4) | (((high >> (j + 16)) & 1u) << 4));
  }
}

// Q4_K / Q5_K super-blocks of 256: {d, dmin, scales[12], (Q5_K: qh[32]), qs[128]}; each 64 values
// take 32 bytes of qs, low nibbles then high nibbles, Q5_K's fifth bit of sub-block s in bit s of
// qh[l].
void k4_block(bool five, const std::byte* b, uint8_t* codes, int8_t* sc, int8_t* m) {
  const auto* scales = reinterpret_cast<const uint8_t*>(b + 4);
  const auto* qh = reinterpret_cast<const uint8_t*>(b + 16);
  const auto* qs = reinterpret_cast<const uint8_t*>(b + (five ? 48 : 16));
  for (int j = 0; j < 4; ++j, qs += 32) {
    for (int l = 0; l < 32; ++l) {
      const int lo_bit = five ? ((qh[l] >> (2 * j)) & 1) << 4 : 0;
      const int hi_bit = five ? ((qh[l] >> (2 * j + 1)) & 1) << 4 : 0;
      codes[64 * j + l] = static_cast<uint8_t>((qs[l] & 0x0F) | lo_bit);
      codes[64 * j + 32 + l] = static_cast<uint8_t>((qs[l] >> 4) | hi_bit);
    }
  }
  for (int s = 0; s < 8; ++s) {
    int8_t scale, min;
    k4_scale_min(scales, s, &scale, &min);
    sc[2 * s] = sc[2 * s + 1] = scale;
    m[2 * s] = m[2 * s + 1] = min;
  }
}

// Q6_K super-blocks of 256: {ql[128], qh[64], scales[16] (signed), d}; in each half of 128,
// value l + 32i (l < 32) takes nibble i / 2 of ql[l + 32 (i % 2)] and bits 2i..2i+1 of qh[l].
void q6_k_block(const std::byte* b, uint8_t* codes, int8_t* sc) {
  const auto* ql = reinterpret_cast<const uint8_t*>(b);
  const auto* qh = reinterpret_cast<const uint8_t*>(b + 128);
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, codes += 128) {
    for (int l = 0; l < 32; ++l) {
      for (int i = 0; i < 4; ++i) {
        const int low = (ql[l + 32 * (i % 2)] >> (4 * (i / 2))) & 0x0F;
        codes[l + 32 * i] = static_cast<uint8_t>(low | (((qh[l] >> (2 * i)) & 3) << 4));
      }
    }
  }
  std::memcpy(sc, b + 192, 16);
}

// IQ4 nibbles of one block of 32 ({u8 qs[16]}: value l is the low nibble of qs[l], value l + 16
// its high nibble) as codebook values + 128.
void iq4_codes(const std::byte* qs, uint8_t* codes) {
  for (int l = 0; l < 16; ++l) {
    const auto byte = static_cast<uint8_t>(qs[l]);
    codes[l] = static_cast<uint8_t>(kIq4Values[byte & 0x0F] + 128);
    codes[l + 16] = static_cast<uint8_t>(kIq4Values[byte >> 4] + 128);
  }
}

// IQ4_XS super-blocks of 256: {d, u16 scales_h, u8 scales_l[4], qs[128]}; sub-block j of 32 has
// the 6-bit scale (low nibble j % 2 of scales_l[j / 2], bits 2j..2j+1 of scales_h) − 32, for both
// of its halves of 16.
void iq4_xs_block(const std::byte* b, uint8_t* codes, int8_t* sc) {
  uint16_t scales_h = 0;
  std::memcpy(&scales_h, b + 2, 2);
  const auto* scales_l = reinterpret_cast<const uint8_t*>(b + 4);
  for (int j = 0; j < 8; ++j) {
    const int low = (scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
    sc[2 * j] = sc[2 * j + 1] =
        static_cast<int8_t>((low | (((scales_h >> (2 * j)) & 3) << 4)) - 32);
    iq4_codes(b + 8 + 16 * j, codes + 32 * j);
  }
}

// Q2_K super-blocks of 256: {scales[16], qs[64], d, dmin}; value 128h + 32s + l is bits 2s..2s+1
// of qs[32h + l]; sub-block j (16 values) has scale scales[j] & 15 and min scales[j] >> 4.
void q2_k_block(const std::byte* b, uint8_t* codes, int8_t* sc, int8_t* m) {
  const auto* scales = reinterpret_cast<const uint8_t*>(b);
  const auto* qs = reinterpret_cast<const uint8_t*>(b + 16);
  for (int e = 0; e < 256; ++e) {
    codes[e] = static_cast<uint8_t>((qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3);
  }
  for (int j = 0; j < 16; ++j) {
    sc[j] = static_cast<int8_t>(scales[j] & 0x0F);
    m[j] = static_cast<int8_t>(scales[j] >> 4);
  }
}

// Q3_K super-blocks of 256: {hmask[32], qs[64], scales[12], d}; value e = 128h + 32s + l is
// q = (bits 2s..2s+1 of qs[32h + l]) + 4·(bit e / 32 of hmask[l]), to be read as q − 4; the 6-bit
// scale of sub-block j: nibble j / 8 of scales[j % 8], high bits 2(j / 4) of scales[8 + j % 4],
// minus 32.
void q3_k_block(const std::byte* b, uint8_t* codes, int8_t* sc) {
  const auto* hmask = reinterpret_cast<const uint8_t*>(b);
  const auto* qs = reinterpret_cast<const uint8_t*>(b + 32);
  const auto* scales = reinterpret_cast<const uint8_t*>(b + 96);
  for (int e = 0; e < 256; ++e) {
    const int l = e % 32;
    const int low = (qs[32 * (e / 128) + l] >> (2 * ((e % 128) / 32))) & 3;
    codes[e] = static_cast<uint8_t>(low | (((hmask[l] >> (e / 32)) & 1) << 2));
  }
  for (int j = 0; j < 16; ++j) {
    const int low = (scales[j % 8] >> (4 * (j / 8))) & 0x0F;
    const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    sc[j] = static_cast<int8_t>((low | (high << 4)) - 32);
  }
}

}  // namespace

void GgufBlockWeight::row_codes(int64_t n, GgufRowCodes& out) const {
  const GgufCodeForm form = code_form();
  HEARTH_CHECK(form.bits > 0, "row_codes: no code form for this GGUF type");
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type_));
  const size_t block_bytes = traits->block_bytes;
  const int64_t supers = in_ / form.super_inputs;
  out.codes.resize(static_cast<size_t>(in_));
  out.d.resize(static_cast<size_t>(supers));
  out.dmin.resize(static_cast<size_t>(supers));
  out.sc.assign(static_cast<size_t>(in_ / 16), 1);
  out.m.assign(static_cast<size_t>(in_ / 16), -1);  // the legacy min: −(dmin · −1) = dmin
  const int64_t stored = row_order_.empty() ? n : row_order_[static_cast<size_t>(n)];
  const std::byte* block = data_ + static_cast<size_t>(stored) * row_bytes_;
  for (int64_t s = 0; s < supers; ++s, block += block_bytes) {
    uint8_t* codes = out.codes.data() + s * form.super_inputs;
    int8_t* sc = out.sc.data() + s * form.super_inputs / 16;
    int8_t* m = out.m.data() + s * form.super_inputs / 16;
    switch (type_) {
      case GgmlType::kQ4_K:
      case GgmlType::kQ5_K:
        out.d[static_cast<size_t>(s)] = half_bits_at(block);
        out.dmin[static_cast<size_t>(s)] = half_bits_at(block + 2);
        k4_block(type_ == GgmlType::kQ5_K, block, codes, sc, m);
        break;
      case GgmlType::kQ2_K:
        out.d[static_cast<size_t>(s)] = half_bits_at(block + 80);
        out.dmin[static_cast<size_t>(s)] = half_bits_at(block + 82);
        q2_k_block(block, codes, sc, m);
        break;
      case GgmlType::kQ3_K:
        out.d[static_cast<size_t>(s)] = half_bits_at(block + 108);
        out.dmin[static_cast<size_t>(s)] = 0;
        q3_k_block(block, codes, sc);
        std::fill(m, m + 16, int8_t{0});
        break;
      case GgmlType::kQ6_K:
        out.d[static_cast<size_t>(s)] = half_bits_at(block + 208);
        out.dmin[static_cast<size_t>(s)] = 0;
        q6_k_block(block, codes, sc);
        std::fill(m, m + 16, int8_t{0});
        break;
      case GgmlType::kIQ4_NL:
        out.d[static_cast<size_t>(s)] = half_bits_at(block);
        out.dmin[static_cast<size_t>(s)] = 0;
        iq4_codes(block + 2, codes);
        break;
      case GgmlType::kIQ4_XS:
        out.d[static_cast<size_t>(s)] = half_bits_at(block);
        out.dmin[static_cast<size_t>(s)] = 0;
        iq4_xs_block(block, codes, sc);
        std::fill(m, m + 16, int8_t{0});
        break;
      default:
        legacy_block(type_, block, codes, &out.d[static_cast<size_t>(s)],
                     &out.dmin[static_cast<size_t>(s)]);
        break;
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
