// Entry points behind load_tokenizer / load_tokenizer_from_gguf, exposed for tests and fuzzers.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "engine/tokenizer/tokenizer.h"

namespace hearth {

// Limits on untrusted tokenizer files.
inline constexpr size_t kMaxTokenizerJsonBytes = size_t{512} << 20;
inline constexpr size_t kMaxJsonDepth = 128;
inline constexpr int64_t kMaxVocabSize = int64_t{1} << 22;

// Parses a tokenizer.json held in memory; `config_json` is the tokenizer_config.json text, if
// any. `source` names the file in error messages. Throws Error(kInvalidFile) for malformed or
// hostile content and Error(kUnsupported) for a well-formed tokenizer Hearth cannot run.
std::unique_ptr<Tokenizer> parse_tokenizer_json(std::string_view json,
                                                std::optional<std::string_view> config_json,
                                                const std::string& source);

// A sentencepiece tokenizer.model held in memory, with the tokenizer_config.json text if any.
std::unique_ptr<Tokenizer> parse_sentencepiece_model(std::string_view model_bytes,
                                                     std::optional<std::string_view> config_json,
                                                     const std::string& source);

// Reads a whole file (bounded by max_bytes), throwing Error(kIo) / Error(kInvalidFile).
std::string read_tokenizer_file(const std::filesystem::path& path, size_t max_bytes);

}  // namespace hearth
