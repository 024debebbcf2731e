// Reads a quantized linear layer (EXL2: `<prefix>.q_weight`, ...; GPTQ: `<prefix>.qweight`, ...)
// from a tensor source, validating every index, bit width and shape against the format.
#pragma once

#include <memory>
#include <string>

#include "engine/io/tensor_source.h"
#include "engine/quant/quantized_weight.h"

namespace hearth {

enum class LinearFormat { kDense, kExl2, kGptq };

// Tells the format of the linear layer `prefix` by its tensor names.
LinearFormat detect_linear_format(const TensorSource& source, const std::string& prefix);

// Loads an EXL2 or GPTQ layer. `quantization_config_json` is the model's quantization_config
// (may be empty); GPTQ needs it for bits, group size, sym and the zero-point convention.
std::shared_ptr<const QuantizedWeight> load_quantized_linear(
    const TensorSource& source, const std::string& prefix, const std::string& quantization_config_json);

}  // namespace hearth
