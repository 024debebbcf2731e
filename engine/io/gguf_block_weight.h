// A GGUF linear weight kept in its block-quantized form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K to
// Q6_K, IQ4_NL, IQ4_XS), decoded a few rows at a time. Values are bit-identical to dequantize_ggml;
// rows may be reordered (q_proj/k_proj carry llama.cpp's RoPE permutation, undone here).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "engine/core/quantized_weight.h"
#include "engine/io/gguf_file.h"

namespace hearth {

// How a GGUF type is held exactly as integer codes q (in input order) with fp16 pairs (d, dmin) per
// `super_inputs` inputs and small integers (sc, m) per 16 inputs:
//   W[n][k] = fp32 fma(d·sc, q − zero, −(dmin·m)),
// dequantize_ggml's value bit for bit (d·sc and dmin·m are exact in fp32, and ggml's one rounded
// operation is this fma's). Q4_0/Q5_0/Q8_0 (d·(q − 2^(b−1)), Q8_0's signed byte s read as
// q = s + 128): super_inputs 32, sc = 1, dmin = 0. Q4_1/Q5_1 (d·q + m): dmin holds m, sc = 1,
// m = −1. Q4_K/Q5_K: per 256 inputs d and dmin, per 32 a 6-bit scale and min. Q2_K: the same with
// a 4-bit scale and min per 16. Q6_K: d per 256, a signed 8-bit scale per 16, zero 32, no min;
// Q3_K likewise with 6-bit scales − 32 and zero 4. IQ4_NL/IQ4_XS (a non-linear codebook): 8-bit
// codes holding the codebook's value + 128, zero 128 (IQ4_XS: d per 256, its 6-bit scales − 32
// per 32); a code is one of 16, so the GPU layout stores its 4-bit index (iq4_codebook).
struct GgufCodeForm {
  int bits = 0;  // code width; 0: the type has no such form
  int zero = 0;
  int super_inputs = 32;
  bool has_min = false;           // false: dmin is 0, every weight is d·sc·(q − zero)
  bool sub_blocks_of_16 = false;  // (sc, m) change every 16 inputs, not every 32
  bool iq4_codebook = false;      // codes are IQ4's codebook values + 128
};
GgufCodeForm gguf_code_form(GgmlType type);

// One output's codes, in the form above.
struct GgufRowCodes {
  std::vector<uint8_t> codes;     // [K]
  std::vector<uint16_t> d, dmin;  // [K / super_inputs], fp16 bits
  std::vector<int8_t> sc, m;      // [K / 16]
};

class GgufBlockWeight final : public QuantizedWeight {
 public:
  // `row_order[n]` is the stored row that holds output feature n (empty: the identity).
  GgufBlockWeight(std::shared_ptr<const GgufFile> gguf, const GgufTensorInfo& tensor,
                  std::vector<int32_t> row_order);

  std::string_view format() const override { return "gguf"; }
  int64_t in_features() const override { return in_; }
  int64_t out_features() const override { return out_; }
  double bits_per_weight() const override { return bits_; }
  void dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const override;

  GgmlType type() const { return type_; }

  GgufCodeForm code_form() const { return gguf_code_form(type_); }
  // Output feature n in code_form() (which must have bits > 0); `out` is resized as needed.
  void row_codes(int64_t n, GgufRowCodes& out) const;

 private:
  std::shared_ptr<const GgufFile> gguf_;
  GgmlType type_;
  const std::byte* data_;
  size_t row_bytes_;
  int64_t in_, out_;
  double bits_;
  std::vector<int32_t> row_order_;
};

// Whether GgufBlockWeight handles this type (block-quantized and dequantizable).
bool gguf_type_is_packed(GgmlType type);

}  // namespace hearth
