// Per-chunk arithmetic of the quantized matrix product (kernels/quant_gemv.cu) and of the
// dequantizer (kernels/quant_dequant.cu): group scales and zeros, code decoding to exact (q − z)
// half2 pairs, the mma.sync steps of one chunk, the K slices and their in-order sums.
//
// Group record ("meta", meta_words<KIND>() 32-bit words, staged in shared memory per group): GPTQ
// scales in words 0..15 (32 halves, the lane of output g reads its four outputs g + 8j at half 4g),
// the asymmetric zeros as 1024 + z in words 16..31; for EXL2 the 4-bit scale codes in words 0..3
// and the group's fp16 scale_max in word 32; for GGUF the super-block's (d, dmin) pairs in words
// 0..31 (word 4g + j: output g + 8j) and the group's sub-scale records in words 32..47 (half 4g +
// j).
#pragma once

#include <type_traits>

#include "kernels/common.cuh"
#include "kernels/quant_kernels.h"
#include "kernels/quant_tile_codec.cuh"

namespace hearth::kernels::qchunk {

// One group record; a multiple of 4 keeps cp.async aligned.
template <QuantKind KIND>
__host__ __device__ constexpr int meta_words() {
  return is_gguf_kind(KIND) ? 48 : 36;
}
constexpr int kMaxMetaWords = 48;

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
// that the per-width code is compiled once per width and chosen by one switch; kGgufCodebook's
// chunks are all of width qtile::kIq4Width.
template <QuantKind KIND, class F>
__device__ __forceinline__ void with_width(int bits, F&& f) {
  if constexpr (KIND == QuantKind::kGgufCodebook) {
    f(std::integral_constant<int, qtile::kIq4Width>{});
    return;
  }
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

// The words a lane holds of a chunk of width code `width` (qtile::width_bits, known at compile
// time for kGgufCodebook).
template <QuantKind KIND>
__device__ __forceinline__ int chunk_words(int width) {
  return KIND == QuantKind::kGgufCodebook ? qtile::width_bits(qtile::kIq4Width) : width;
}

// Calls f(std::integral_constant<QuantKind, K>{}) for kind k (host side), so that a launcher
// names each kind's kernel once and one switch picks it.
template <class F>
auto with_kind(QuantKind k, F&& f) {
  switch (k) {
    case QuantKind::kExl2:
      return f(std::integral_constant<QuantKind, QuantKind::kExl2>{});
    case QuantKind::kGptqSym:
      return f(std::integral_constant<QuantKind, QuantKind::kGptqSym>{});
    case QuantKind::kGguf:
      return f(std::integral_constant<QuantKind, QuantKind::kGguf>{});
    case QuantKind::kGgufHalf:
      return f(std::integral_constant<QuantKind, QuantKind::kGgufHalf>{});
    case QuantKind::kGgufCodebook:
      return f(std::integral_constant<QuantKind, QuantKind::kGgufCodebook>{});
    default:
      return f(std::integral_constant<QuantKind, QuantKind::kGptqAsym>{});
  }
}

// kGguf's forms of scales, QuantTileLayout::SubScales' values: a = d and b = dmin per chunk
// (kNone), a and b per chunk (kScaleMin), per row half with b = 0 (kHalves), per row half
// (kScaleMinHalves). A compile-time parameter of the chunk loops (with_gguf_form), so that each
// form's loop gets its registers on its own and no instructions for the others: one loop
// branching on the form per chunk spilled hundreds of bytes.
enum GgufForm : int {
  kGgufFormMin = 0,
  kGgufFormScaleMin = 1,
  kGgufFormHalves = 2,
  kGgufFormHalvesMin = 3
};

// Calls f(std::integral_constant<int, FORM>{}) for the form in `gguf_mode` of a kind with kGguf's
// scales; other kinds take kGgufFormMin, which they ignore.
template <QuantKind KIND, class F>
__device__ __forceinline__ void with_gguf_form(uint32_t gguf_mode, F&& f) {
  if constexpr (!has_gguf_scales(KIND)) {
    f(std::integral_constant<int, kGgufFormMin>{});
  } else {
    switch (gguf_mode & 0xffu) {
      case kGgufFormScaleMin:
        f(std::integral_constant<int, kGgufFormScaleMin>{});
        break;
      case kGgufFormHalves:
        f(std::integral_constant<int, kGgufFormHalves>{});
        break;
      case kGgufFormHalvesMin:
        f(std::integral_constant<int, kGgufFormHalvesMin>{});
        break;
      default:
        f(std::integral_constant<int, kGgufFormMin>{});
        break;
    }
  }
}

// The chunk widths of kGguf's matrices in each form: Q4_1 / Q5_1 (kGgufFormMin) and Q4_K / Q5_K
// (kGgufFormScaleMin) 4 and 5, Q3_K / Q6_K (kGgufFormHalves) 3 and 6, Q2_K (kGgufFormHalvesMin) 2.
// Every chunk of such a matrix has its type's width (valid_gguf checks max_bits against these).
__host__ __device__ constexpr bool gguf_form_has_width(int form, int bits) {
  return form == kGgufFormHalvesMin ? bits == 2
         : form == kGgufFormHalves  ? (bits == 3 || bits == 6)
                                    : (bits == 4 || bits == 5);
}

// with_width for the row kernel's loops in form FORM: kGguf compiles only its form's widths. All
// six in every form made 24 loops, 7 of which ever run, and kernels of 21k-36k instructions whose
// register allocation spilled up to 1.6 KB a thread; now 8k-16k, spilling about a third as much.
template <QuantKind KIND, int FORM, class F>
__device__ __forceinline__ void with_form_width(int bits, F&& f) {
  if constexpr (KIND != QuantKind::kGguf) {
    with_width<KIND>(bits, f);
  } else if constexpr (FORM == kGgufFormHalvesMin) {
    f(std::integral_constant<int, 2>{});
  } else if constexpr (FORM == kGgufFormHalves) {
    if (bits == 6) {
      f(std::integral_constant<int, 6>{});
    } else {
      f(std::integral_constant<int, 3>{});
    }
  } else {
    if (bits == 5) {
      f(std::integral_constant<int, 5>{});
    } else {
      f(std::integral_constant<int, 4>{});
    }
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
// −(64 + z)); one shift per word reaches the upper byte. Other widths (and IQ4's codebook, B =
// qtile::kIq4Width, its words holding indices): the codec's decode, then (1024 + q) − (1024 + z).
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

// What a lane needs to turn its codes of one group into weights, loaded once per group from the
// group record: load(meta, g, bits, gguf_mode), then decode<B>(words, pairs) gives the lane's 16
// weight pairs (half2, the reference dequantizer's fp16 values) of each chunk of the group.
// EXL2 / GPTQ: fp16 scales and zeros, (q − z) · s in half2 (one rounding).
template <QuantKind KIND>
struct GroupScales {
  __half2 sc[4], zz[4], neg_z64[4];
  __device__ __forceinline__ GroupScales() {
#pragma unroll
    for (int j = 0; j < 4; ++j) sc[j] = zz[j] = neg_z64[j] = __float2half2_rn(0.0f);
  }
  __device__ __forceinline__ void load(const uint32_t* meta, int g, int bits, uint32_t) {
    group_scales<KIND>(meta, g, bits, sc, zz);
    high_nibble_offsets(zz, neg_z64);
  }
  template <int B>
  __device__ __forceinline__ void decode(const uint32_t w[B], uint32_t pairs[qtile::kPairs]) const {
    chunk_codes<B>(w, zz, neg_z64, pairs);
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      pairs[p] = as_u32(__hmul2(as_half2(pairs[p]), sc[qtile::pair_output_slot(p)]));
    }
  }
};

// GGUF (QuantTileLayout::Kind::kGguf): w = a·(q − zero) + b with a = d·sc and b = −(dmin·m), exact
// fp32 products per output and row half (16 rows: Q6_K's and Q2_K's scales change there), as
// dequantize_ggml computes it. Those values have up to 17 significant bits, more than fp16 holds,
// so the products (chunk_mma) multiply x by the exact codes q − zero on the tensor cores and apply
// the scales to the fp32 sums: Σ x·w = a·Σ x·(q − zero) + b·Σ x. decode() gives the weights
// themselves rounded once to fp16, for the dequantizer and the packed-table lookup.
template <>
struct GroupScales<QuantKind::kGguf> {
  float a[2][4], b[2][4];
  __half2 zz;       // 1024 + zero
  __half2 neg_z64;  // −(64 + zero), for chunk_codes' 4-bit high nibbles
  __device__ __forceinline__ GroupScales()
      : zz(__float2half2_rn(1024.0f)), neg_z64(__float2half2_rn(-64.0f)) {
#pragma unroll
    for (int j = 0; j < 4; ++j) a[0][j] = a[1][j] = b[0][j] = b[1][j] = 0.0f;
  }
  // The matrix's zero (gguf_mode's second byte): once per run of chunks, not per group.
  __device__ __forceinline__ void set_zero(uint32_t mode) {
    zz = __float2half2_rn(1024.0f + static_cast<float>((mode >> 8) & 0xffu));
    neg_z64 = __hsub2(__float2half2_rn(960.0f), zz);
  }
  // The group's a[.][j] and b[.][j] for output slot j, in form FORM (b[1] and a[1] only where
  // they differ from b[0] and a[0]), from the super-block's (d, dmin) in the record `sup` and the
  // group's sub-scales in the record `meta` (the same record, but in the row kernel, where only a
  // super-block's first group record holds its (d, dmin)).
  template <int FORM>
  __device__ __forceinline__ void load_form(const uint32_t* sup_meta, const uint32_t* meta, int g) {
    const uint4 sup = reinterpret_cast<const uint4*>(sup_meta)[g];
    const uint2 sub =
        FORM != kGgufFormMin ? reinterpret_cast<const uint2*>(meta + 32)[g] : make_uint2(0, 0);
    const uint32_t d_dmin[4] = {sup.x, sup.y, sup.z, sup.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float d = __half2float(__ushort_as_half(static_cast<unsigned short>(d_dmin[j])));
      const float dmin =
          __half2float(__ushort_as_half(static_cast<unsigned short>(d_dmin[j] >> 16)));
      const uint32_t rec = ((j < 2 ? sub.x : sub.y) >> (16 * (j & 1))) & 0xffffu;
      if constexpr (FORM == kGgufFormMin) {  // dmin is the block's minimum
        a[0][j] = a[1][j] = d;
        b[0][j] = b[1][j] = dmin;
      } else if constexpr (FORM == kGgufFormScaleMin) {  // low byte sc, high byte m
        a[0][j] = a[1][j] = d * static_cast<float>(rec & 0xffu);
        b[0][j] = b[1][j] = -(dmin * static_cast<float>(rec >> 8));
      } else if constexpr (FORM == kGgufFormHalves) {  // signed sc per half, m = 0
        a[0][j] = d * static_cast<float>(static_cast<int8_t>(rec & 0xffu));
        a[1][j] = d * static_cast<float>(static_cast<int8_t>(rec >> 8));
        b[0][j] = b[1][j] = 0.0f;
      } else {  // sc | m << 4 per half
        a[0][j] = d * static_cast<float>(rec & 15u);
        b[0][j] = -(dmin * static_cast<float>((rec >> 4) & 15u));
        a[1][j] = d * static_cast<float>((rec >> 8) & 15u);
        b[1][j] = -(dmin * static_cast<float>((rec >> 12) & 15u));
      }
    }
  }
  template <int FORM>
  __device__ __forceinline__ void load_form(const uint32_t* meta, int g) {
    load_form<FORM>(meta, meta, g);
  }
  __device__ __forceinline__ void load(const uint32_t* meta, int g, int, uint32_t mode) {
    set_zero(mode);
    with_gguf_form<QuantKind::kGguf>(mode,
                                     [&](auto form) { load_form<decltype(form)::value>(meta, g); });
  }
  // The lane's 16 pairs of q − zero, exact in fp16.
  template <int B>
  __device__ __forceinline__ void codes(const uint32_t w[B], uint32_t qz[qtile::kPairs]) const {
    const __half2 z[4] = {zz, zz, zz, zz}, n[4] = {neg_z64, neg_z64, neg_z64, neg_z64};
    chunk_codes<B>(w, z, n, qz);
  }
  template <int B>
  __device__ __forceinline__ void decode(const uint32_t w[B], uint32_t pairs[qtile::kPairs]) const {
    codes<B>(w, pairs);
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      const int half = (p >> 2) & 1, slot = qtile::pair_output_slot(p);
      const float2 q = __half22float2(as_half2(pairs[p]));
      pairs[p] = as_u32(__floats2half2_rn(__fmaf_rn(a[half][slot], q.x, b[half][slot]),
                                          __fmaf_rn(a[half][slot], q.y, b[half][slot])));
    }
  }
};

// IQ4's codebook chunks: kGguf's scales and products; their codes come from the lookup.
template <>
struct GroupScales<QuantKind::kGgufCodebook> : GroupScales<QuantKind::kGguf> {};

// GGUF Q4_1 / Q5_1 whose every d·q + dmin is exact in fp32 (checked at load; QuantTileLayout's
// gguf_half_exact): the fp16 fma (q, d, dmin), rounded once, is the same value in one
// instruction per pair. Same group record as kGguf, without sub-scales.
template <>
struct GroupScales<QuantKind::kGgufHalf> {
  __half2 d[4], dmin[4], zz[4], neg_z64[4];
  __device__ __forceinline__ GroupScales() {
#pragma unroll
    for (int j = 0; j < 4; ++j) d[j] = dmin[j] = zz[j] = neg_z64[j] = __float2half2_rn(0.0f);
  }
  __device__ __forceinline__ void load(const uint32_t* meta, int g, int, uint32_t mode) {
    const uint4 sup = reinterpret_cast<const uint4*>(meta)[g];
    const uint32_t d_dmin[4] = {sup.x, sup.y, sup.z, sup.w};
    const __half2 z = __float2half2_rn(1024.0f + static_cast<float>((mode >> 8) & 0xffu));
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      d[j] = __half2half2(__ushort_as_half(static_cast<unsigned short>(d_dmin[j])));
      dmin[j] = __half2half2(__ushort_as_half(static_cast<unsigned short>(d_dmin[j] >> 16)));
      zz[j] = z;
    }
    high_nibble_offsets(zz, neg_z64);
  }
  template <int B>
  __device__ __forceinline__ void decode(const uint32_t w[B], uint32_t pairs[qtile::kPairs]) const {
    chunk_codes<B>(w, zz, neg_z64, pairs);  // q − zero, exact
#pragma unroll
    for (int p = 0; p < qtile::kPairs; ++p) {
      const int slot = qtile::pair_output_slot(p);
      pairs[p] = as_u32(__hfma2(as_half2(pairs[p]), d[slot], dmin[slot]));
    }
  }
};

// GGUF's chunk (GroupScales<kGguf>) in one form of its scales: MMAs of x by the exact codes,
// then per output and row half acc += a · Σ x·(q − zero) + b · Σ x, in fp32 (HALVES: a and b of
// each row half apart; else one of each for the chunk; MIN: b not zero). Σ x is one more MMA,
// against a tile of ones, which leaves it where the accumulators need it (rows 2t, 2t + 1 in c0,
// c1). This costs about a third of decoding each weight in fp32 and rounding it to fp16 (the
// form before: five instructions a pair), and the weights multiplied are the reference's fp32
// values, not their fp16 roundings.
template <int B, int MT, bool HALVES, bool MIN>
__device__ __forceinline__ void chunk_mma_scaled_form(const uint32_t qz[qtile::kPairs],
                                                      const uint32_t bf[MT][4],
                                                      const GroupScales<QuantKind::kGguf>& s,
                                                      float acc[2][MT][4]) {
  const uint32_t ones[4] = {0x3C003C00u, 0x3C003C00u, 0x3C003C00u, 0x3C003C00u};
  // Row tile by row tile, so that only one tile's sums are live at a time (with two to four
  // tiles, holding them all spilled).
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int h = 0; h < (HALVES ? 2 : 1); ++h) {
      const int ks0 = HALVES ? h : 0, ks1 = HALVES ? h : 1;
      // c = Σ over k16 steps ks0 .. ks1 of A(nt) · x, A(−1) being ones.
      auto times_x = [&](int nt, float c[4]) {
        c[0] = c[1] = c[2] = c[3] = 0.0f;
#pragma unroll
        for (int ks = ks0; ks <= ks1; ++ks) {
          uint32_t a[4];
#pragma unroll
          for (int r = 0; r < 4; ++r) a[r] = nt < 0 ? ones[r] : qz[(nt * 2 + ks) * 4 + r];
          mma_16816<__half>(c, a, bf[mt][2 * ks], bf[mt][2 * ks + 1]);
        }
      };
      float sx[4];  // Σ x of rows 2t and 2t + 1 in [0] and [1]
      if constexpr (MIN) times_x(-1, sx);
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        float t[4];  // Σ x·(q − zero)
        times_x(nt, t);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int slot = 2 * nt + (i >> 1);
          float v = __fmaf_rn(s.a[h][slot], t[i], acc[nt][mt][i]);
          if constexpr (MIN) v = __fmaf_rn(s.b[h][slot], sx[i & 1], v);
          acc[nt][mt][i] = v;
        }
      }
    }
  }
}

// GGUF's chunk: its exact codes, then the products in the form of the matrix's scales.
template <int B, int MT, int FORM>
__device__ __forceinline__ void chunk_mma_scaled(const uint32_t w[B], const uint32_t bf[MT][4],
                                                 const GroupScales<QuantKind::kGguf>& s,
                                                 float acc[2][MT][4]) {
  uint32_t qz[qtile::kPairs];
  s.template codes<B>(w, qz);
  chunk_mma_scaled_form<B, MT, (FORM >= kGgufFormHalves), FORM != kGgufFormHalves>(qz, bf, s, acc);
}

// One chunk from the lane's B words: decode to weights and run the MMAs for MT tiles of 8 x rows.
// bf[mt]: the lane's B fragments of the chunk for x row 8·mt + g — {rows 2t, 2t + 1}, {2t + 8,
// 2t + 9}, {2t + 16, 2t + 17}, {2t + 24, 2t + 25} as half2. kGguf's weights are their fp16
// roundings here (as the dequantizer writes them).
template <int B, int MT, QuantKind KIND>
__device__ __forceinline__ void chunk_mma_decoded(const uint32_t w[B], const uint32_t bf[MT][4],
                                                  const GroupScales<KIND>& scales,
                                                  float acc[2][MT][4]) {
  uint32_t wt[qtile::kPairs];
  scales.template decode<B>(w, wt);
#pragma unroll
  for (int ks = 0; ks < 2; ++ks) {
#pragma unroll
    for (int nt = 0; nt < 2; ++nt) {
      uint32_t a[4];
#pragma unroll
      for (int r = 0; r < 4; ++r) a[r] = wt[(nt * 2 + ks) * 4 + r];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        mma_16816<__half>(acc[nt][mt], a, bf[mt][2 * ks], bf[mt][2 * ks + 1]);
      }
    }
  }
}

// The same product as the row kernel makes it (kernels/quant_gemv.cu): kGguf's with its fp32
// weights, in form FORM (chunk_mma_scaled); the others' as chunk_mma_decoded.
template <int B, int MT, int FORM, QuantKind KIND>
__device__ __forceinline__ void chunk_mma(const uint32_t w[B], const uint32_t bf[MT][4],
                                          const GroupScales<KIND>& scales, float acc[2][MT][4]) {
  if constexpr (has_gguf_scales(KIND)) {
    chunk_mma_scaled<B, MT, FORM>(w, bf, scales, acc);
  } else {
    chunk_mma_decoded<B, MT>(w, bf, scales, acc);
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

// sum_slices for up to R rows at once (row r from p + r · row_stride, the first `rows` of them),
// each added in the same slice order, so each row gets sum_slices' bits: R · 8 loads in flight
// instead of 16, so that several rows' sums do not each cost their own round trips to L2.
template <int R>
__device__ __forceinline__ void sum_slices_rows(const float* p, int64_t row_stride, int rows,
                                                int64_t stride, int count, float sum[R]) {
  constexpr int kBatch = 8;
#pragma unroll
  for (int r = 0; r < R; ++r) sum[r] = 0.0f;
  for (int s = 0; s < count; s += kBatch) {
    float v[R][kBatch];
#pragma unroll
    for (int r = 0; r < R; ++r) {
      const float* at = p + r * row_stride + int64_t(s) * stride;
#pragma unroll
      for (int i = 0; i < kBatch; ++i, at += stride) {
        v[r][i] = r < rows && s + i < count ? __ldcg(at) : 0.0f;
      }
    }
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int i = 0; i < kBatch; ++i) {
        if (s + i < count) sum[r] += v[r][i];
      }
    }
  }
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

inline bool valid_gguf(const QuantMatrix& m) {
  const uint32_t sub_scales = m.gguf_mode & 0xffu;
  return m.super_records && sub_scales <= 3 && (sub_scales == 0 || m.sub_records) &&
         (m.gguf_mode >> 16) == 0 && (has_gguf_scales(m.kind) || sub_scales == 0) &&
         m.super_shift >= 0 && m.super_shift <= 3 &&
         (m.groups + (int64_t(1) << m.super_shift) - 1) >> m.super_shift <= m.supers &&
         (m.kind != QuantKind::kGguf ||
          gguf_form_has_width(static_cast<int>(sub_scales), m.max_bits));
}

inline bool valid_matrix(const QuantMatrix& m) {
  return m.qweight && m.chunk_line && m.chunk_info && m.row_src && m.chunks > 0 && m.blocks > 0 &&
         m.in_features > 0 && m.out_features > 0 && m.in_features < (int64_t(1) << 31) &&
         m.out_features < (int64_t(1) << 31) && m.max_bits >= 2 && m.max_bits <= 8 &&
         (m.kind == QuantKind::kExl2 ? (m.scale_codes && m.scale_max)
          : is_gguf_kind(m.kind)     ? valid_gguf(m)
                                     : (m.scales && (m.kind != QuantKind::kGptqAsym || m.zeros)));
}

}  // namespace hearth::kernels::qchunk
