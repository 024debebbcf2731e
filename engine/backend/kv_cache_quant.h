// The bits of a quantized KV cache (q8, q6, q4): the CPU backend stores exactly these, and the
// CUDA kernels write and read the same bytes (tests compare them).
//
// A row is one position's keys (or values) of one kv head: head_dim (D, 64 or 128) values.
// It is first rotated by the normalized Walsh-Hadamard transform H (H = Hᵀ = H⁻¹), which
// spreads an outlier channel over every dim, then cut into groups of kKvQuantGroup values,
// each with an fp16 scale s = max|x| / 2^(b-1) (rounded up) and b-bit codes
//   q8, q6: c = clamp(floor(x · (1/s)) + 2^(b-1), 0, 2^b - 1), read back as (c - 2^(b-1) + 0.5) · s
// (mid-rise: all 2^b levels are used; a zero group has s = 0 and reads back 0).
//   q4: c is the nearest of 16 levels that lie closer together near zero, read back as
// kv_q4_level(c) · s. A rotated row is close to normal, and a group of 32 normal values scaled
// by its maximum is dense in the middle and sparse at the ends: levels placed for that
// (Lloyd-Max for it, here the odd cubic that follows them) have 15 % less squared error than
// even steps on a model's rotated keys and values, which cuts the cache's KL divergence 7 %
// (SmolLM2). The levels are exact in fp32.
// Attention never rotates the cache back: H is orthonormal, so q·k = (Hq)·(Hk) and
// Σⱼ pⱼ vⱼ = H(Σⱼ pⱼ Hvⱼ): q is rotated once, the weighted sum of values once.
//
// Packing of a row's codes: q8: D bytes; q4: D/2 bytes, value j in the low (j even) or high
// nibble of byte j/2; q6: its low 4 bits as q4 (D/2 bytes), then its high 2 bits, value j at
// bits 2·(j % 4) of byte D/2 + j/4.
//
// A sequence's first position is the one most heads attend to most (an "attention sink"), and
// its key is unlike the others: a page whose slot 0 holds position 0 of a sequence also keeps
// that key in fp16 (rotated and offset as the codes are, rounded to nearest), and attention
// reads the fp16 key instead of its codes. Its codes are stored too.
//
// A page of one layer holds, in order: the keys' codes [kv heads][page_size][row bytes], the
// values' codes (same), the keys' scales [kv heads][page_size][D / kKvQuantGroup] (fp16), the
// values' scales (same), the first position's keys [kv heads][D] (fp16; meaningful only in a
// sequence's first page). All layers of a page are contiguous, as for the 16-bit cache.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "engine/backend/backend.h"

namespace hearth {

inline constexpr int kKvQuantGroup = 32;
inline constexpr int kMaxHeadDim = 128;  // of a quantized cache

// Where a page's parts lie, in bytes, for a quantized cache spec.
struct KvQuantLayout {
  int bits = 0;
  int64_t row_bytes = 0;       // codes of one row
  int64_t scales_per_row = 0;  // D / kKvQuantGroup
  int64_t v_codes = 0;         // from a layer-page's start to its values' codes
  int64_t k_scales = 0;        // ... to its keys' scales
  int64_t v_scales = 0;        // ... to its values' scales
  int64_t first_keys = 0;      // ... to its first position's fp16 keys
  int64_t layer_page_bytes = 0;

  static KvQuantLayout of(const KvCacheSpec& spec);
};

// Whether a head_dim can use a quantized cache (the rotation needs a power of two; the CUDA
// kernels handle 64 and 128).
bool kv_quant_supported(int64_t head_dim);  // head_dim 64 or kMaxHeadDim
// Throws Error(kUnsupported), saying what to choose instead, when `type` is quantized and the
// heads are not supported.
void require_kv_quant_supported(KvCacheType type, int64_t head_dim);

// In place: x ← H·x over n values (n a power of two), butterflies of stride 1, 2, 4, … then a
// multiplication by 1/√n, in this order (the kernels do the same operations).
void hadamard_rotate(float* x, int64_t n);

// Level of q4 code c (0 .. 15), in units of its scale: u · (3/4 + 5u²/1024) with u = c - 7.5,
// from ±0.3756 to ±7.6849. Every intermediate is exact in fp32, so any order of the operations
// (the kernels fuse them) gives these bits.
constexpr float kv_q4_level(int code) {
  const float u = static_cast<float>(code) - 7.5f;
  return u * (0.75f + 0.0048828125f * (u * u));
}

// One rotated row → codes and scales (fp16 bit patterns). q4's code of y = x · (1/s) is
// 8 + k for y ≥ 0 and 7 - k below, k being how many of the midpoints between the positive
// levels |y| reaches (a tie goes to the larger magnitude; NaN gives code 8).
void quantize_kv_row(const float* rotated, int64_t head_dim, int bits, uint8_t* codes,
                     uint16_t* scales);
// Codes and scales → the rotated row's values.
void dequantize_kv_row(const uint8_t* codes, const uint16_t* scales, int64_t head_dim, int bits,
                       float* rotated);
// A sequence's first key, rotated and offset, as fp16 bit patterns / back (round to nearest).
void store_first_key(const float* rotated, int64_t head_dim, uint16_t* row);
void load_first_key(const uint16_t* row, int64_t head_dim, float* rotated);

// Key offsets (KvCacheStorage::set_key_offsets): a stored key row is quantize(H·k − μ), μ taken
// after the rotation with one float subtraction per value (the kernels do the same).
// Throws Error(kInvalidArgument) unless `offsets` holds layers × kv heads × head_dim finite
// values.
void check_key_offsets(const KvCacheSpec& spec, std::span<const float> offsets);
// KvCacheStorage::mean_keys over a quantized cache whose pages (all layers of one, as laid out
// above) `page_bytes` returns: the mean of the keys read back at positions [begin, end) of the
// sequence with `pages` (position 0 from its fp16 row), plus `offsets` (empty: none).
std::vector<float> mean_stored_keys(const KvCacheSpec& spec, std::span<const int32_t> pages,
                                    int64_t begin, int64_t end, std::span<const float> offsets,
                                    const std::function<const uint8_t*(int32_t page)>& page_bytes);

}  // namespace hearth
