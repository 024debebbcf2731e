// A GGUF linear weight kept in its block-quantized form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K), decoded a few rows at a time. Values are bit-identical to dequantize_ggml; rows
// may be reordered (q_proj/k_proj carry llama.cpp's RoPE permutation, undone here).
#pragma once

#include <memory>
#include <vector>

#include "engine/core/quantized_weight.h"
#include "engine/io/gguf_file.h"

namespace hearth {

// The width b of a type whose blocks are d·(q − 2^(b−1)) with one fp16 d per 32 values (Q4_0: 4,
// Q5_0: 5, Q8_0: 8); 0 for the others. See GgufBlockWeight::symmetric_codes().
int gguf_symmetric_code_bits(GgmlType type);

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

  // Q4_0, Q5_0 and Q8_0 hold W[n][k] = d·(q − 2^(b−1)) with one fp16 d per 32 inputs and b-bit
  // codes q (Q8_0's signed byte s read as q = s + 128): symmetric GPTQ with groups of 32, which
  // the GPU's quantized kernels run as they are. The code width b; 0 for the other types.
  int symmetric_code_bits() const { return gguf_symmetric_code_bits(type_); }
  // Output feature n's K codes (q above, in input order) and the fp16 bits of its K/32 scales.
  // Only for types with symmetric_code_bits() > 0.
  void symmetric_codes(int64_t n, uint8_t* codes, uint16_t* scales) const;

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
