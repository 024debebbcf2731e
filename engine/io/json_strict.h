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

// Error(kInvalidFile) naming the byte when brackets nest deeper than `max_depth` (strings are
// skipped). Linear, allocation-free; run before any parser sees hostile text.
void check_json_depth(std::string_view text, const std::string& what, int max_depth,
                      uint64_t base_offset = 0);

// Throws Error(kInvalidFile) for a syntax error that nlohmann's SAX parser reports at
// `position` (1-based) of a document that starts at file byte `base_offset`.
[[noreturn]] void fail_json_syntax(const std::string& what, std::size_t position,
                                   uint64_t base_offset, const std::exception& e);

// Reads a whole small text file (config.json, index json) with a size cap. Error(kIo) when it
// cannot be read, Error(kInvalidFile) when it exceeds `max_bytes`.
std::string read_text_file(const std::string& path, uint64_t max_bytes);

// JSON value kind in words ("a string", "an unsigned integer", ...), for messages.
const char* json_kind(const nlohmann::json& v);

}  // namespace hearth
