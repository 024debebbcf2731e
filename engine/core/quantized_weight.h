// A quantized linear layer's weights as read from a file (EXL2 or GPTQ), kept packed in host
// memory. Backends either run it directly (CUDA kernels read the packed form) or decode it in
// blocks (the CPU reference).
#pragma once

#include <cstdint>
#include <string_view>

namespace hearth {

class QuantizedWeight {
 public:
  virtual ~QuantizedWeight() = default;
  virtual std::string_view format() const = 0;  // "exl2" or "gptq"
  virtual int64_t in_features() const = 0;      // K
  virtual int64_t out_features() const = 0;     // N, without any padding the file carries
  virtual double bits_per_weight() const = 0;   // storage bits per weight, scales included
  // Dequantizes output features [n_begin, n_end) into `out`, row-major [(n_end - n_begin), K],
  // in the original input-feature order (act-order undone): out[n][k] = W[n][k] of nn.Linear.
  // Values are the exact fp16 values of the format's reference dequantizer, as float.
  virtual void dequantize_rows(int64_t n_begin, int64_t n_end, float* out) const = 0;
};

}  // namespace hearth
