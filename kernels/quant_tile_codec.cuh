// The packed layout Hearth's quantized GEMM reads (EXL2 and GPTQ alike), shared by the host code
// that builds it at load time (engine/formats/quant_tile_layout.cpp), the CUDA kernels
// (kernels/quant_gemv.cu, kernels/quant_dequant.cu) and the CPU tests. Plain C++ when not
// compiled by nvcc.
//
// Weights are cut into tiles of 32 outputs × 32 stored rows ("chunks"); a chunk has one bit
// width b and one quantization group. One warp works on one 32-output column of tiles with
// mma.sync m16n8k16 (weights as the A operand, 16 outputs × 16 rows; activations as B, 16 rows ×
// 8 tokens), i.e. two 16-output halves (nt) × two 16-row steps (ks) per chunk. Each lane holds
// exactly the 32 codes of its A fragments: 16 pairs p = (nt·2 + ks)·4 + r, r being the A
// register, each pair two consecutive rows of one output:
//
//   lane = 4·g + t;  output(p) = 16·nt + g + 8·(r & 1);  row(p, h) = 16·ks + 2t + 8·(r >> 1) + h.
//
// So the lane's outputs are g + 8j, j = 2·nt + (r & 1) ∈ 0..3 — the order its scales are stored in.
// The 32 codes (32·b bits) of a lane fill b 32-bit words. Each pair's two codes sit at bit
// offsets that differ by 16, so one mask yields both halves of a half2 at once with the fp16
// "magic number" trick: (word >> s) & mask | 0x64006400 is the half2 (1024 + lo, 1024 + hi).
//
//   b = 2: pair p in word p/8 at bits 2(p%8) (low half) and 16 + 2(p%8) (high half).
//   b = 4: word p/4, bits 4(p%4) and 16 + 4(p%4).      b = 8: word p/2, bits 8(p%2) and 16 +
//   8(p%2). b = 3: pairs 0..14 in word p/5 at bits 3(p%5) (+16); pair 15 is spread over the spare
//   bits
//          15 and 31: bit i of its low value is bit 15 of word i, of its high value bit 31.
//   b = 5: pairs 0..14 in word p/3 at bits 5(p%3) (+16); pair 15's bit i in bit 15/31 of word i.
//   b = 6: pairs 0..11 in word p/2 at bits 6(p%2) (+16); pair 12 + i (i < 4) keeps its low four
//          bits in bits 12..15 (28..31) of word i and its high two bits in bits 12 + 2(i%2)
//          (+16) of word 4 + i/2.
//
// A chunk of width kIq4Width holds 4-bit indices into IQ4's codebook (GGUF IQ4_NL/IQ4_XS), whose
// values + 128 are its codes (1..241, zero 128). Its 4 words are arranged for the lookup
// (PRMT selects 4 bytes with 4 nibbles): word i holds pairs 4i + k; in its low half the low
// indices of pairs 4i and 4i + 1 at bits 0 and 4 and their high ones at bits 8 and 12, in its
// high half those of pairs 4i + 2 and 4i + 3 likewise (+16).
//
// In memory the words are "planar": word i of lane l of chunk c in 32-output block nb is at
//   qweight[(nb · lines + line(c) + i) · 32 + l],   line(c) = Σ_{c' < c} b(c'),
// so a warp reading word i of a chunk reads 128 contiguous bytes, whatever b is.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HEARTH_QHD __host__ __device__ __forceinline__
#else
#define HEARTH_QHD inline
#endif

namespace hearth::qtile {

constexpr int kChunkRows = 32;            // stored rows per chunk
constexpr int kTileOutputs = 32;          // outputs per block column (one warp)
constexpr int kPairs = 16;                // half2 pairs per lane per chunk
constexpr uint32_t kMagic = 0x64006400u;  // half2(1024, 1024)
// Chunk width code of IQ4's codebook chunks: 4 bits stored (width_bits), looked up to 8-bit codes.
constexpr int kIq4Width = 16 + 4;
// IQ4's codebook (ggml's kvalues_iq4nl) + 128 as bytes, little-endian: entries 0..7, 8..15.
constexpr uint64_t kIq4TableLow = 0x766A5D4F3F2D1801ull;
constexpr uint64_t kIq4TableHigh = 0xF1D9C5B5A6998D81ull;

// The words a chunk of width code `width` stores per lane.
HEARTH_QHD constexpr int width_bits(int width) {
  return width == kIq4Width ? 4 : width;
}
// Where a kIq4Width chunk keeps pair p's low index in word p / 4 (its high index 8 bits above).
HEARTH_QHD constexpr int iq4_pair_shift(int p) {
  return 16 * ((p >> 1) & 1) + 4 * (p & 1);
}
// Code i (0..15) of IQ4's codebook as its 8-bit code (value + 128).
HEARTH_QHD constexpr uint32_t iq4_code(uint32_t i) {
  return static_cast<uint32_t>(((i & 8u) ? kIq4TableHigh : kIq4TableLow) >> (8 * (i & 7u))) & 0xffu;
}

HEARTH_QHD int pair_output(int p, int lane) {
  return 16 * (p >> 3) + (lane >> 2) + 8 * (p & 1);
}
HEARTH_QHD int pair_row(int p, int lane, int h) {
  return 16 * ((p >> 2) & 1) + 2 * (lane & 3) + 8 * ((p >> 1) & 1) + h;
}
// Index j (0..3) of the pair's output among the lane's four outputs g + 8j.
HEARTH_QHD int pair_output_slot(int p) {
  return 2 * (p >> 3) + (p & 1);
}

// ---- encoding (host) ----
// codes[2p + h]: the code of pair p, half h. words: B words, zero-initialised here.
// kIq4Width: codes are the 4-bit codebook indices.
template <int B>
HEARTH_QHD void encode_lane(const uint32_t* codes, uint32_t* words) {
  for (int i = 0; i < width_bits(B); ++i) words[i] = 0;
  auto put = [&](int p, int word, int shift) {
    words[word] |= codes[2 * p] << shift;
    words[word] |= codes[2 * p + 1] << (16 + shift);
  };
  if constexpr (B == kIq4Width) {
    for (int p = 0; p < kPairs; ++p) {
      words[p / 4] |= codes[2 * p] << iq4_pair_shift(p);
      words[p / 4] |= codes[2 * p + 1] << (iq4_pair_shift(p) + 8);
    }
  } else if constexpr (B == 2 || B == 4 || B == 8) {
    constexpr int per = 16 / B;
    for (int p = 0; p < kPairs; ++p) put(p, p / per, B * (p % per));
  } else if constexpr (B == 3 || B == 5) {
    constexpr int per = B == 3 ? 5 : 3;
    for (int p = 0; p < 15; ++p) put(p, p / per, B * (p % per));
    for (int i = 0; i < B; ++i) {
      words[i] |= ((codes[30] >> i) & 1u) << 15;
      words[i] |= ((codes[31] >> i) & 1u) << 31;
    }
  } else {  // B == 6
    for (int p = 0; p < 12; ++p) put(p, p / 2, 6 * (p % 2));
    for (int i = 0; i < 4; ++i) {
      const uint32_t lo = codes[2 * (12 + i)], hi = codes[2 * (12 + i) + 1];
      words[i] |= (lo & 15u) << 12;
      words[i] |= (hi & 15u) << 28;
      words[4 + i / 2] |= (lo >> 4) << (12 + 2 * (i % 2));
      words[4 + i / 2] |= (hi >> 4) << (28 + 2 * (i % 2));
    }
  }
}

// ---- decoding (device and host) ----
// The half2 bit pattern (1024 + lo) | (1024 + hi) << 16 of pair P, from the lane's B words.
template <int B, int P>
HEARTH_QHD uint32_t decode_pair(const uint32_t* w) {
  if constexpr (B == kIq4Width) {
    const uint32_t v = w[P / 4] >> iq4_pair_shift(P);
    return (iq4_code(v & 15u) | iq4_code((v >> 8) & 15u) << 16) | kMagic;
  } else if constexpr (B == 2 || B == 4 || B == 8) {
    constexpr int per = 16 / B;
    constexpr uint32_t mask = ((1u << B) - 1u) * 0x00010001u;
    return ((w[P / per] >> (B * (P % per))) & mask) | kMagic;
  } else if constexpr (B == 3 || B == 5) {
    constexpr int per = B == 3 ? 5 : 3;
    constexpr uint32_t mask = ((1u << B) - 1u) * 0x00010001u;
    if constexpr (P < 15) {
      return ((w[P / per] >> (B * (P % per))) & mask) | kMagic;
    } else {
      uint32_t v = kMagic;
      for (int i = 0; i < B; ++i) v |= (w[i] >> (15 - i)) & (0x00010001u << i);
      return v;
    }
  } else {  // B == 6
    if constexpr (P < 12) {
      return ((w[P / 2] >> (6 * (P % 2))) & 0x003F003Fu) | kMagic;
    } else {
      constexpr int i = P - 12;
      return ((w[i] >> 12) & 0x000F000Fu) | ((w[4 + i / 2] >> (8 + 2 * (i % 2))) & 0x00300030u) |
             kMagic;
    }
  }
}

#if defined(__CUDACC__)
// prmt.b32 (PTX's byte permute; the selector's nibbles pick bytes of {b, a}, 0..3 from a).
__device__ __forceinline__ uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t selector) {
  uint32_t d;
  asm("prmt.b32 %0, %1, %2, %3;" : "=r"(d) : "r"(a), "r"(b), "r"(selector));
  return d;
}

// The 16 pairs of a kIq4Width chunk, four PRMT lookups per word: each of a half's four indices
// picks its byte from the table's first eight (low three bits) and its last eight, then a third
// PRMT keeps the one its top bit names; two more put the two pairs' bytes under the magic number.
__device__ __forceinline__ void decode_iq4_lane(const uint32_t* w, uint32_t* pairs) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t low3 = w[i] & 0x77777777u;  // a set top bit would make PRMT sign-fill
    const uint32_t pick = ((w[i] >> 1) & 0x44444444u) | 0x32103210u;  // byte k or 4 + k
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint32_t sel = low3 >> (16 * h), choose = pick >> (16 * h);
      const uint32_t bytes =
          byte_perm(byte_perm(uint32_t(kIq4TableLow), uint32_t(kIq4TableLow >> 32), sel),
                    byte_perm(uint32_t(kIq4TableHigh), uint32_t(kIq4TableHigh >> 32), sel), choose);
      // bytes: low codes of pairs 4i + 2h, + 1 in bytes 0, 1, their high codes in bytes 2, 3.
      pairs[4 * i + 2 * h] = byte_perm(bytes, 0x64646464u, 0x4240u);
      pairs[4 * i + 2 * h + 1] = byte_perm(bytes, 0x64646464u, 0x4341u);
    }
  }
}
#endif

// All 16 pairs at once (unrolled by the compiler).
template <int B>
HEARTH_QHD void decode_lane(const uint32_t* w, uint32_t* pairs) {
#if defined(__CUDA_ARCH__)
  if constexpr (B == kIq4Width) {
    decode_iq4_lane(w, pairs);
    return;
  }
#endif
  pairs[0] = decode_pair<B, 0>(w);
  pairs[1] = decode_pair<B, 1>(w);
  pairs[2] = decode_pair<B, 2>(w);
  pairs[3] = decode_pair<B, 3>(w);
  pairs[4] = decode_pair<B, 4>(w);
  pairs[5] = decode_pair<B, 5>(w);
  pairs[6] = decode_pair<B, 6>(w);
  pairs[7] = decode_pair<B, 7>(w);
  pairs[8] = decode_pair<B, 8>(w);
  pairs[9] = decode_pair<B, 9>(w);
  pairs[10] = decode_pair<B, 10>(w);
  pairs[11] = decode_pair<B, 11>(w);
  pairs[12] = decode_pair<B, 12>(w);
  pairs[13] = decode_pair<B, 13>(w);
  pairs[14] = decode_pair<B, 14>(w);
  pairs[15] = decode_pair<B, 15>(w);
}

// The same for a width code known only at run time (host code).
inline void encode_lane_bits(int width, const uint32_t* codes, uint32_t* words) {
  switch (width) {
    case 2:
      return encode_lane<2>(codes, words);
    case 3:
      return encode_lane<3>(codes, words);
    case 4:
      return encode_lane<4>(codes, words);
    case 5:
      return encode_lane<5>(codes, words);
    case 6:
      return encode_lane<6>(codes, words);
    case kIq4Width:
      return encode_lane<kIq4Width>(codes, words);
    default:
      return encode_lane<8>(codes, words);
  }
}
inline void decode_lane_bits(int width, const uint32_t* words, uint32_t* pairs) {
  switch (width) {
    case 2:
      return decode_lane<2>(words, pairs);
    case 3:
      return decode_lane<3>(words, pairs);
    case 4:
      return decode_lane<4>(words, pairs);
    case 5:
      return decode_lane<5>(words, pairs);
    case 6:
      return decode_lane<6>(words, pairs);
    case kIq4Width:
      return decode_lane<kIq4Width>(words, pairs);
    default:
      return decode_lane<8>(words, pairs);
  }
}

// Where stored row r is staged for the quantized kernels (x in shared memory, a LoRA's A): within
// a chunk, the four half2 mma.sync B-fragment words of lane t (stored rows 2t + 8k + h, k < 4,
// h < 2) side by side at 8t + 2k + h, so the lane fetches them with one 16-byte load.
HEARTH_QHD int staged_position(int r) {
  return (r & ~31) + ((r & 7) >> 1) * 8 + ((r >> 3) & 3) * 2 + (r & 1);
}

// The lane's 32 stored codes (codes[2p + h], as encode_lane takes them) of a chunk of width code
// `width`: codebook indices for kIq4Width (host code).
inline void decode_lane_codes(int width, const uint32_t* words, uint32_t* codes) {
  if (width == kIq4Width) {
    for (int p = 0; p < kPairs; ++p) {
      const uint32_t v = words[p / 4] >> iq4_pair_shift(p);
      codes[2 * p] = v & 15u;
      codes[2 * p + 1] = (v >> 8) & 15u;
    }
    return;
  }
  uint32_t pairs[kPairs];
  decode_lane_bits(width, words, pairs);
  for (int p = 0; p < kPairs; ++p) {
    codes[2 * p] = pairs[p] & 0x3ffu;  // the mantissa of fp16 1024 + code
    codes[2 * p + 1] = (pairs[p] >> 16) & 0x3ffu;
  }
}

// Per-chunk metadata word: the width code in the low byte, group index above.
HEARTH_QHD uint32_t chunk_info(int width, uint32_t group) {
  return static_cast<uint32_t>(width) | (group << 8);
}
// The width code (2..8 bits, or kIq4Width) and the bits stored per code.
HEARTH_QHD int chunk_width(uint32_t info) {
  return static_cast<int>(info & 0xffu);
}
HEARTH_QHD int chunk_bits(uint32_t info) {
  return width_bits(chunk_width(info));
}
HEARTH_QHD uint32_t chunk_group(uint32_t info) {
  return info >> 8;
}

}  // namespace hearth::qtile
