// Defensive JSON parsing for tokenizer files: bounded nesting depth (checked before the parser
// runs), parse errors as Error(kInvalidFile) with the byte offset, typed field access with
// clear messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace hearth::json_util {

nlohmann::json parse(std::string_view text, const std::string& source, size_t max_depth);

// Field access; `where` names the object in messages ("tokenizer.json: model").
const nlohmann::json* find(const nlohmann::json& object, const char* key);
bool get_bool(const nlohmann::json& object, const char* key, bool fallback,
              const std::string& where);
std::optional<std::string> get_string(const nlohmann::json& object, const char* key,
                                      const std::string& where);
// An integer in [min, max].
int64_t to_int(const nlohmann::json& value, int64_t min, int64_t max, const std::string& where);
const std::string& to_string(const nlohmann::json& value, const std::string& where);

// A special-token field of tokenizer_config.json: "<s>" or {"content": "<s>", ...}.
std::optional<std::string> token_content(const nlohmann::json& object, const char* key);

}  // namespace hearth::json_util
