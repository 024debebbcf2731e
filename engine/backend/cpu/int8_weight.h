// A quantized linear (EXL2, GPTQ or GGUF blocks) re-laid for integer dot products against
// activations quantized to 8 bits (engine/backend/cpu/int8_dot.h): the CPU backend's fast path.
//
// Stored row s multiplies input feature row_src[s] (−1: padding, which multiplies zero). Rows are
// ordered so that every span of `span_rows` (16 or 32) rows shares one scale and offset per output
// (EXL2 keeps its act-order rows, GPTQ rows are sorted by group, GGUF keeps its order), and
// output n's weight at stored row s is
//   w = scale[n][s / span_rows] · (u − 128) + offset[n][s / span_rows],
// where u is the byte code: u − 128 is the format's q − zero. These are the format's values with
// its fp16 rounding of each product left out (GGUF blocks: exactly dequantize_ggml's, before
// ggml's one rounding). The exact path (dequantize_rows) stays the reference.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "engine/core/quantized_weight.h"
#include "engine/core/thread_pool.h"

namespace hearth::cpu {

struct Int8Weight {
  int64_t in_features = 0;   // K
  int64_t out_features = 0;  // N
  int64_t stored_rows = 0;   // S, a multiple of 32
  int span_rows = 32;        // 16 or 32
  std::vector<int32_t> row_src;
  bool rows_in_order = false;  // row_src[s] = s for s < K, padding only after K
  // Codes whose values are at most 16 (4-bit formats, IQ4's codebook) are stored as nibbles that
  // index `lut`: byte j of each 32-row block holds rows j (low) and j + 16 (high).
  bool nibbles = false;
  std::array<uint8_t, 16> lut{};
  std::vector<uint8_t> codes;  // [N][S] bytes u, or [N][S / 2] nibbles
  std::vector<float> scales;   // [N][S / span_rows]
  std::vector<float> offsets;  // [N][S / span_rows]; empty when every offset is 0
  int64_t spans() const { return stored_rows / span_rows; }
  int64_t code_bytes_per_output() const { return nibbles ? stored_rows / 2 : stored_rows; }
  size_t bytes() const;
};

// Whether build_int8_weight() takes this weight (Exl2Weight, GptqWeight, or a GgufBlockWeight
// of a type with a GgufCodeForm).
bool has_int8_weight(const QuantizedWeight& weight);
// Re-lays `weight`, spreading the outputs over `pool`.
Int8Weight build_int8_weight(const QuantizedWeight& weight, ThreadPool& pool);
// Int8Weight::bytes() of a weight's re-layout (has_int8_weight), from its shape and stored order
// alone (the memory plan's figure), counting offsets for every format that may have them (GGUF
// types with minimums, asymmetric GPTQ).
size_t int8_weight_bytes(const QuantizedWeight& weight);
// Output n's weights as the fast path multiplies them, in input order: out[k] (K floats).
void int8_weight_row(const Int8Weight& weight, int64_t n, float* out);

}  // namespace hearth::cpu
