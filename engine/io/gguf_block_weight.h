// A GGUF linear weight kept in its block-quantized form (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q4_K,
// Q5_K, Q6_K), decoded a few rows at a time. Values are bit-identical to dequantize_ggml; rows
// may be reordered (q_proj/k_proj carry llama.cpp's RoPE permutation, undone here).
#pragma once

#include <memory>
#include <vector>

#include "engine/core/quantized_weight.h"
#include "engine/io/gguf_file.h"

namespace hearth {

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
