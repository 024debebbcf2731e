#include "engine/quant/quantized_linear_loader.h"

#include "engine/core/error.h"

namespace hearth {

LinearFormat detect_linear_format(const TensorSource& source, const std::string& prefix) {
  if (source.has(prefix + ".q_weight")) return LinearFormat::kExl2;
  if (source.has(prefix + ".qweight")) return LinearFormat::kGptq;
  return LinearFormat::kDense;
}

std::shared_ptr<const QuantizedWeight> load_quantized_linear(const TensorSource& source,
                                                             const std::string& prefix,
                                                             const std::string&) {
  const char* format =
      detect_linear_format(source, prefix) == LinearFormat::kExl2 ? "EXL2" : "GPTQ";
  fail(ErrorCode::kUnsupported, prefix + ": " + format +
                                    " weights cannot be loaded by this version of Hearth yet");
}

}  // namespace hearth
