// JSON parsing for untrusted files (safetensors headers, index files, config.json): nesting
// depth is bounded before the parser runs, duplicate object keys are refused, and invalid UTF-8
// is refused. Errors are Error(kInvalidFile) naming `what` and the byte offset.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "engine/io/printable.h"

namespace hearth {

// `what` names the document in messages ("model.safetensors: header"); `base_offset` is added to
// byte offsets so that they are file offsets (8 for a safetensors header).
nlohmann::json parse_json_strict(std::string_view text, const std::string& what, int max_depth = 64,
                                 uint64_t base_offset = 0);

// Reads a whole small text file (config.json, index json) with a size cap. Error(kIo) when it
// cannot be read, Error(kInvalidFile) when it exceeds `max_bytes`.
std::string read_text_file(const std::string& path, uint64_t max_bytes);

// JSON value kind in words ("a string", "an unsigned integer", ...), for messages.
const char* json_kind(const nlohmann::json& v);

}  // namespace hearth
