// Hugging Face config.json (+ generation_config.json) -> ModelConfig, for LlamaForCausalLM and
// MistralForCausalLM. Follows the fields and defaults of transformers' LlamaConfig and of
// exllamav2's reader (see docs/FORMATS.md §4).
#pragma once

#include <filesystem>
#include <optional>
#include <string_view>

#include "engine/io/model_config.h"

namespace hearth {

// Reads model_dir/config.json and, when present, model_dir/generation_config.json (whose
// eos_token_id list replaces config.json's). Error(kIo) when config.json cannot be read,
// Error(kInvalidFile) naming the field for malformed or absurd values, Error(kUnsupported) for
// architectures other than Llama and Mistral. The result has passed ModelConfig::validate().
ModelConfig parse_hf_config(const std::filesystem::path& model_dir);

// The same from the documents' text (tests and fuzzing).
ModelConfig parse_hf_config_json(std::string_view config_json,
                                 std::optional<std::string_view> generation_config_json,
                                 const std::string& display_name = "config.json");

}  // namespace hearth
