// The parts of a GPTQ model's quantization config that decoding needs: config.json's
// `quantization_config` or a separate quantize_config.json (AutoGPTQ, GPTQModel, TheBloke).
// Every field is optional; the tensors themselves decide what they can (bits from shapes,
// groups from g_idx), and the config is checked against them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace hearth {

struct GptqConfig {
  std::optional<int> bits;
  std::optional<int64_t> group_size;  // -1: one group over all of K
  std::optional<bool> sym;
  std::optional<bool> desc_act;
  // "checkpoint_format" (AutoGPTQ, transformers) or "format" (GPTQModel): "gptq" (zeros stored
  // minus one, v1), "gptq_v2" (zeros as they are), "marlin", ... Empty when absent.
  std::string checkpoint_format;
  std::string quant_method;  // "gptq", "awq", "exl2", ... Empty when absent.
  bool is_marlin_format = false;
};

// Parses a quantization config object. Unknown keys are ignored; a known key with a wrong
// type or an absurd value is Error(kInvalidFile) naming `where` and the key. An empty text
// gives an empty config.
GptqConfig parse_gptq_config(std::string_view json, const std::string& where);

// The folder's quantize_config.json as text, or empty when there is none.
std::string read_quantize_config_file(const std::filesystem::path& folder);

}  // namespace hearth
