// Reads a quantized linear layer (EXL2: `<prefix>.q_weight`, ...; GPTQ: `<prefix>.qweight`, ...)
// from a tensor source, validating every index, bit width and shape against the format.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "engine/core/quantized_weight.h"
#include "engine/io/tensor_source.h"

namespace hearth {

enum class LinearFormat { kDense, kExl2, kGptq };

// Tells the format of the linear layer `prefix` by its tensor names.
LinearFormat detect_linear_format(const TensorSource& source, const std::string& prefix);

struct QuantizedLinearOptions {
  // The model's quantization_config (may be empty). For GPTQ, a quantize_config.json next to
  // the tensors' file is read when this is empty.
  std::string quantization_config_json;
  // The layer's shape from the model config; 0 = as stored. EXL2 pads out_features to a
  // multiple of 32 (lm_head); out_features() reports this real width.
  int64_t out_features = 0;
  int64_t in_features = 0;
};

// Loads an EXL2 or GPTQ layer. A malformed layer is Error(kInvalidFile) naming the tensor; a
// well-formed one Hearth does not run (AWQ, Marlin layout, 5-bit GPTQ) is Error(kUnsupported).
std::shared_ptr<const QuantizedWeight> load_quantized_linear(const TensorSource& source,
                                                             const std::string& prefix,
                                                             const QuantizedLinearOptions& options);

// As above with only the config (shape as stored).
std::shared_ptr<const QuantizedWeight> load_quantized_linear(
    const TensorSource& source, const std::string& prefix,
    const std::string& quantization_config_json);

}  // namespace hearth
