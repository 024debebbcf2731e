#include "engine/formats/quantized_linear_loader.h"

#include <filesystem>

#include "engine/core/error.h"
#include "engine/formats/exl2_weight.h"
#include "engine/formats/gptq_config.h"
#include "engine/formats/gptq_weight.h"

namespace hearth {

LinearFormat detect_linear_format(const TensorSource& source, const std::string& prefix) {
  if (source.has(prefix + ".q_weight")) return LinearFormat::kExl2;
  if (source.has(prefix + ".qweight")) return LinearFormat::kGptq;
  return LinearFormat::kDense;
}

std::shared_ptr<const QuantizedWeight> load_quantized_linear(
    const TensorSource& source, const std::string& prefix, const QuantizedLinearOptions& options) {
  std::shared_ptr<const QuantizedWeight> w;
  switch (detect_linear_format(source, prefix)) {
    case LinearFormat::kExl2:
      w = Exl2Weight::load(source, prefix, options.out_features);
      break;
    case LinearFormat::kGptq: {
      std::string text = options.quantization_config_json;
      std::string where = "quantization_config";
      if (text.empty()) {
        const std::filesystem::path file = source.info(prefix + ".qweight").file;
        if (!file.empty()) {
          text = read_quantize_config_file(file.parent_path());
          where = (file.parent_path() / "quantize_config.json").string();
        }
      }
      w = GptqWeight::load(source, prefix, parse_gptq_config(text, where), options.out_features);
      break;
    }
    case LinearFormat::kDense:
      fail(ErrorCode::kInvalidArgument, prefix + " is not a quantized layer");
  }
  if (options.in_features > 0 && w->in_features() != options.in_features) {
    fail(ErrorCode::kInvalidFile,
         prefix + ": quantized layer has " + std::to_string(w->in_features()) +
             " inputs, the config needs " + std::to_string(options.in_features));
  }
  return w;
}

std::shared_ptr<const QuantizedWeight> load_quantized_linear(
    const TensorSource& source, const std::string& prefix,
    const std::string& quantization_config_json) {
  QuantizedLinearOptions options;
  options.quantization_config_json = quantization_config_json;
  return load_quantized_linear(source, prefix, options);
}

}  // namespace hearth
