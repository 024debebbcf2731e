// The non-tensor files of a Hugging Face folder, made from what Hearth read: config.json from a
// ModelConfig, and (for GGUF sources with a byte-level BPE vocabulary) tokenizer.json and
// tokenizer_config.json from the GGUF's tokenizer.ggml.* metadata, so that a model imported
// from GGUF becomes a complete folder that Hearth and exllamav2 load.
#pragma once

#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/io/model_config.h"

namespace hearth {
class GgufFile;
}

namespace hearth::quantizer {

nlohmann::ordered_json config_json_from(const ModelConfig& config);

// Writes tokenizer.json, tokenizer_config.json (chat template, bos/eos) and
// generation_config.json into `dir`. Error(kUnsupported) for vocabularies other than "gpt2".
void write_tokenizer_files_from_gguf(const GgufFile& gguf, const ModelConfig& config,
                                     const std::filesystem::path& dir);

}  // namespace hearth::quantizer
