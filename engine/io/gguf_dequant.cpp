#include "engine/io/gguf_dequant.h"

#include <cstring>
#include <string>

#include "engine/core/dtype.h"
#include "engine/core/error.h"

namespace hearth {

namespace {

constexpr int kQK = 32;    // elements per block of the 32-element formats
constexpr int kQKK = 256;  // elements per super-block of the k-quants

struct TypeRow {
  uint32_t id;
  GgmlTypeTraits traits;
};

// ggml's type table (ggml.h / ggml-common.h), numbered as in GGUF files.
constexpr TypeRow kTypes[] = {
    {0, {"F32", 1, 4}},         {1, {"F16", 1, 2}},         {2, {"Q4_0", 32, 18}},
    {3, {"Q4_1", 32, 20}},      {6, {"Q5_0", 32, 22}},      {7, {"Q5_1", 32, 24}},
    {8, {"Q8_0", 32, 34}},      {9, {"Q8_1", 32, 40}},      {10, {"Q2_K", 256, 84}},
    {11, {"Q3_K", 256, 110}},   {12, {"Q4_K", 256, 144}},   {13, {"Q5_K", 256, 176}},
    {14, {"Q6_K", 256, 210}},   {15, {"Q8_K", 256, 292}},   {16, {"IQ2_XXS", 256, 66}},
    {17, {"IQ2_XS", 256, 74}},  {18, {"IQ3_XXS", 256, 98}}, {19, {"IQ1_S", 256, 50}},
    {20, {"IQ4_NL", 32, 18}},   {21, {"IQ3_S", 256, 110}},  {22, {"IQ2_S", 256, 82}},
    {23, {"IQ4_XS", 256, 136}}, {24, {"I8", 1, 1}},         {25, {"I16", 1, 2}},
    {26, {"I32", 1, 4}},        {27, {"I64", 1, 8}},        {28, {"F64", 1, 8}},
    {29, {"IQ1_M", 256, 56}},   {30, {"BF16", 1, 2}},       {34, {"TQ1_0", 256, 54}},
    {35, {"TQ2_0", 256, 66}},   {39, {"MXFP4", 32, 17}},
};

inline uint8_t u8(const std::byte* p) {
  return static_cast<uint8_t>(*p);
}
inline uint16_t u16(const std::byte* p) {
  return static_cast<uint16_t>(u8(p) | (static_cast<uint16_t>(u8(p + 1)) << 8));
}
inline uint32_t u32(const std::byte* p) {
  return static_cast<uint32_t>(u16(p)) | (static_cast<uint32_t>(u16(p + 2)) << 16);
}
inline float f16(const std::byte* p) {
  return half_to_float(u16(p));
}

// Q4_0: {fp16 d; u8 qs[16]}; element j < 16 is the low nibble of qs[j], j >= 16 the high
// nibble of qs[j - 16]; value = (nibble - 8) * d.
void dequant_q4_0(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += kQK) {
    const float d = f16(b);
    const std::byte* qs = b + 2;
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = (u8(qs + j) & 0x0F) - 8;
      const int x1 = (u8(qs + j) >> 4) - 8;
      y[j] = static_cast<float>(x0) * d;
      y[j + kQK / 2] = static_cast<float>(x1) * d;
    }
  }
}

// Q4_1: {fp16 d; fp16 m; u8 qs[16]}; value = nibble * d + m.
void dequant_q4_1(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 20, y += kQK) {
    const float d = f16(b);
    const float m = f16(b + 2);
    const std::byte* qs = b + 4;
    for (int j = 0; j < kQK / 2; ++j) {
      const int x0 = u8(qs + j) & 0x0F;
      const int x1 = u8(qs + j) >> 4;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + kQK / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

// Q5_0: {fp16 d; u32 qh; u8 qs[16]}; bit j of qh is the fifth bit of element j;
// value = (5-bit value - 16) * d.
void dequant_q5_0(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 22, y += kQK) {
    const float d = f16(b);
    const uint32_t qh = u32(b + 2);
    const std::byte* qs = b + 6;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) & 1u) << 4;
      const int h1 = ((qh >> (j + 16)) & 1u) << 4;
      const int x0 = ((u8(qs + j) & 0x0F) | h0) - 16;
      const int x1 = ((u8(qs + j) >> 4) | h1) - 16;
      y[j] = static_cast<float>(x0) * d;
      y[j + kQK / 2] = static_cast<float>(x1) * d;
    }
  }
}

// Q5_1: {fp16 d; fp16 m; u32 qh; u8 qs[16]}; value = 5-bit value * d + m.
void dequant_q5_1(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 24, y += kQK) {
    const float d = f16(b);
    const float m = f16(b + 2);
    const uint32_t qh = u32(b + 4);
    const std::byte* qs = b + 8;
    for (int j = 0; j < kQK / 2; ++j) {
      const int h0 = ((qh >> j) & 1u) << 4;
      const int h1 = ((qh >> (j + 16)) & 1u) << 4;
      const int x0 = (u8(qs + j) & 0x0F) | h0;
      const int x1 = (u8(qs + j) >> 4) | h1;
      y[j] = static_cast<float>(x0) * d + m;
      y[j + kQK / 2] = static_cast<float>(x1) * d + m;
    }
  }
}

// Q8_0: {fp16 d; i8 qs[32]}; value = q * d.
void dequant_q8_0(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 34, y += kQK) {
    const float d = f16(b);
    for (int j = 0; j < kQK; ++j) {
      y[j] = static_cast<float>(static_cast<int8_t>(u8(b + 2 + j))) * d;
    }
  }
}

// The 12 packed bytes of Q4_K/Q5_K hold eight 6-bit scales and eight 6-bit mins: for j < 4,
// scale = q[j] & 63 and min = q[j + 4] & 63; for j >= 4 the low four bits come from q[j + 4]
// and the high two from the top bits of q[j - 4] (scales) or q[j] (mins).
inline void scale_min_k4(int j, const std::byte* q, uint8_t* sc, uint8_t* m) {
  if (j < 4) {
    *sc = u8(q + j) & 63;
    *m = u8(q + j + 4) & 63;
  } else {
    *sc = static_cast<uint8_t>((u8(q + j + 4) & 0x0F) | ((u8(q + j - 4) >> 6) << 4));
    *m = static_cast<uint8_t>((u8(q + j + 4) >> 4) | ((u8(q + j) >> 6) << 4));
  }
}

// Q4_K: {fp16 d; fp16 dmin; u8 scales[12]; u8 qs[128]}: eight sub-blocks of 32; each 64
// elements use 32 bytes of qs, low nibbles for the first 32, high nibbles for the next 32;
// value = (d * scale) * q - (dmin * min).
void dequant_q4_k(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 144) {
    const float d = f16(b);
    const float dmin = f16(b + 2);
    const std::byte* scales = b + 4;
    const std::byte* q = b + 16;
    int is = 0;
    for (int j = 0; j < kQKK; j += 64) {
      uint8_t sc, m;
      scale_min_k4(is + 0, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      scale_min_k4(is + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(u8(q + l) & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(u8(q + l) >> 4) - m2;
      q += 32;
      is += 2;
    }
  }
}

// Q5_K: {fp16 d; fp16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: as Q4_K, plus a fifth bit
// for sub-block s (0..7) taken from bit s of qh[l].
void dequant_q5_k(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 176) {
    const float d = f16(b);
    const float dmin = f16(b + 2);
    const std::byte* scales = b + 4;
    const std::byte* qh = b + 16;
    const std::byte* ql = b + 48;
    int is = 0;
    unsigned u1 = 1, u2 = 2;
    for (int j = 0; j < kQKK; j += 64) {
      uint8_t sc, m;
      scale_min_k4(is + 0, scales, &sc, &m);
      const float d1 = d * static_cast<float>(sc);
      const float m1 = dmin * static_cast<float>(m);
      scale_min_k4(is + 1, scales, &sc, &m);
      const float d2 = d * static_cast<float>(sc);
      const float m2 = dmin * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const int v = (u8(ql + l) & 0x0F) + ((u8(qh + l) & u1) ? 16 : 0);
        *y++ = d1 * static_cast<float>(v) - m1;
      }
      for (int l = 0; l < 32; ++l) {
        const int v = (u8(ql + l) >> 4) + ((u8(qh + l) & u2) ? 16 : 0);
        *y++ = d2 * static_cast<float>(v) - m2;
      }
      ql += 32;
      is += 2;
      u1 <<= 2;
      u2 <<= 2;
    }
  }
}

// Q6_K: {u8 ql[128]; u8 qh[64]; i8 scales[16]; fp16 d}: two halves of 128 elements; in each,
// element l + 32k (l < 32, k < 4) takes 4 low bits from ql (nibble k / 2 of byte l + 32 (k % 2))
// and 2 high bits from bits 2k..2k+1 of qh[l]; value = (d * scale[e / 16]) * (q - 32).
void dequant_q6_k(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 210) {
    const float d = f16(b + 208);
    const std::byte* ql = b;
    const std::byte* qh = b + 128;
    const std::byte* sc = b + 192;
    for (int n = 0; n < kQKK; n += 128) {
      for (int l = 0; l < 32; ++l) {
        const int is = l / 16;
        const int q1 = ((u8(ql + l) & 0x0F) | (((u8(qh + l) >> 0) & 3) << 4)) - 32;
        const int q2 = ((u8(ql + l + 32) & 0x0F) | (((u8(qh + l) >> 2) & 3) << 4)) - 32;
        const int q3 = ((u8(ql + l) >> 4) | (((u8(qh + l) >> 4) & 3) << 4)) - 32;
        const int q4 = ((u8(ql + l + 32) >> 4) | (((u8(qh + l) >> 6) & 3) << 4)) - 32;
        auto scale = [&](int k) { return static_cast<float>(static_cast<int8_t>(u8(sc + k))); };
        y[l + 0] = d * scale(is + 0) * static_cast<float>(q1);
        y[l + 32] = d * scale(is + 2) * static_cast<float>(q2);
        y[l + 64] = d * scale(is + 4) * static_cast<float>(q3);
        y[l + 96] = d * scale(is + 6) * static_cast<float>(q4);
      }
      y += 128;
      ql += 64;
      qh += 32;
      sc += 8;
    }
  }
}

// Q2_K: {u8 scales[16]; u8 qs[64]; fp16 d; fp16 dmin}: two halves of 128; in each, value
// l + 32s (l < 32, s < 4) is bits 2s..2s+1 of qs[l]; sub-block e / 16 has scale (low nibble of
// scales[e / 16]) and min (high nibble); value = (d * scale) * q - (dmin * min).
void dequant_q2_k(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 84) {
    const float d = f16(b + 80);
    const float dmin = f16(b + 82);
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128, s = (e % 128) / 32, l = e % 32;
      const uint8_t sc = u8(b + e / 16);
      const int q = (u8(b + 16 + 32 * half + l) >> (2 * s)) & 3;
      y[e] = d * static_cast<float>(sc & 0x0F) * static_cast<float>(q) -
             dmin * static_cast<float>(sc >> 4);
    }
    y += kQKK;
  }
}

// Q3_K: {u8 hmask[32]; u8 qs[64]; u8 scales[12]; fp16 d}: value e = 128h + 32s + l takes two
// low bits from bits 2s..2s+1 of qs[32h + l] and a third from bit e / 32 of hmask[l]; the 6-bit
// scale of sub-block j (16 values) has its low four bits in nibble j / 8 of scales[j % 8] and its
// high two in bits 2(j / 4) of scales[8 + j % 4]; value = (d * (scale - 32)) * (q3 - 4).
void dequant_q3_k(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 110) {
    const float d = f16(b + 108);
    const std::byte* scales = b + 96;
    for (int e = 0; e < kQKK; ++e) {
      const int half = e / 128, s = (e % 128) / 32, l = e % 32, j = e / 16;
      const int low = (u8(scales + j % 8) >> (4 * (j / 8))) & 0x0F;
      const int high = (u8(scales + 8 + j % 4) >> (2 * (j / 4))) & 3;
      const int scale = (low | (high << 4)) - 32;
      const int q =
          ((u8(b + 32 + 32 * half + l) >> (2 * s)) & 3) | (((u8(b + l) >> (e / 32)) & 1) << 2);
      y[e] = d * static_cast<float>(scale) * static_cast<float>(q - 4);
    }
    y += kQKK;
  }
}

// IQ4_NL: {fp16 d; u8 qs[16]}, nibbles as Q4_0's; value = d * kIq4Values[nibble].
void dequant_iq4_nl(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 18, y += kQK) {
    const float d = f16(b);
    for (int j = 0; j < kQK / 2; ++j) {
      y[j] = d * static_cast<float>(kIq4Values[u8(b + 2 + j) & 0x0F]);
      y[j + kQK / 2] = d * static_cast<float>(kIq4Values[u8(b + 2 + j) >> 4]);
    }
  }
}

// IQ4_XS: {fp16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: eight sub-blocks of 32, each with a
// 6-bit scale (low nibble j % 2 of scales_l[j / 2], high bits 2j..2j+1 of scales_h) and 16 bytes
// of nibbles as IQ4_NL's; value = (d * (scale - 32)) * kIq4Values[nibble].
void dequant_iq4_xs(const std::byte* b, float* y, int64_t nb) {
  for (int64_t i = 0; i < nb; ++i, b += 136) {
    const float d = f16(b);
    const uint16_t scales_h = u16(b + 2);
    for (int j = 0; j < 8; ++j, y += 32) {
      const int low = (u8(b + 4 + j / 2) >> (4 * (j % 2))) & 0x0F;
      const int scale = (low | (((scales_h >> (2 * j)) & 3) << 4)) - 32;
      const float dl = d * static_cast<float>(scale);
      const std::byte* qs = b + 8 + 16 * j;
      for (int l = 0; l < 16; ++l) {
        y[l] = dl * static_cast<float>(kIq4Values[u8(qs + l) & 0x0F]);
        y[l + 16] = dl * static_cast<float>(kIq4Values[u8(qs + l) >> 4]);
      }
    }
  }
}

}  // namespace

std::optional<GgmlTypeTraits> ggml_type_traits(uint32_t type) {
  for (const auto& row : kTypes) {
    if (row.id == type) return row.traits;
  }
  return std::nullopt;
}

const char* ggml_type_name(GgmlType t) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(t));
  return traits ? traits->name : "unknown";
}

bool ggml_can_dequantize(GgmlType type) {
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
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
      return true;
    default:
      return false;
  }
}

void dequantize_ggml(GgmlType type, const std::byte* src, float* dst, int64_t n) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(type));
  if (!traits || !ggml_can_dequantize(type)) {
    fail(ErrorCode::kUnsupported,
         std::string("cannot dequantize ggml type ") +
             (traits ? traits->name : "#" + std::to_string(static_cast<uint32_t>(type))));
  }
  HEARTH_CHECK(n >= 0 && n % traits->block_elements == 0, "element count not a block multiple");
  const int64_t nb = n / traits->block_elements;
  switch (type) {
    case GgmlType::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * 4);
      return;
    case GgmlType::kF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = f16(src + 2 * i);
      return;
    case GgmlType::kBF16:
      for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_float(u16(src + 2 * i));
      return;
    case GgmlType::kQ4_0:
      dequant_q4_0(src, dst, nb);
      return;
    case GgmlType::kQ4_1:
      dequant_q4_1(src, dst, nb);
      return;
    case GgmlType::kQ5_0:
      dequant_q5_0(src, dst, nb);
      return;
    case GgmlType::kQ5_1:
      dequant_q5_1(src, dst, nb);
      return;
    case GgmlType::kQ8_0:
      dequant_q8_0(src, dst, nb);
      return;
    case GgmlType::kQ4_K:
      dequant_q4_k(src, dst, nb);
      return;
    case GgmlType::kQ5_K:
      dequant_q5_k(src, dst, nb);
      return;
    case GgmlType::kQ6_K:
      dequant_q6_k(src, dst, nb);
      return;
    case GgmlType::kQ2_K:
      dequant_q2_k(src, dst, nb);
      return;
    case GgmlType::kQ3_K:
      dequant_q3_k(src, dst, nb);
      return;
    case GgmlType::kIQ4_NL:
      dequant_iq4_nl(src, dst, nb);
      return;
    case GgmlType::kIQ4_XS:
      dequant_iq4_xs(src, dst, nb);
      return;
    default:
      break;
  }
  fail(ErrorCode::kInternal, "dequantize_ggml: unhandled type");
}

}  // namespace hearth
