#include "engine/tokenizer/tokenizer_json_util.h"

#include "engine/core/error.h"

namespace hearth::json_util {

nlohmann::json parse(std::string_view text, const std::string& source, size_t max_depth) {
  // Nesting depth outside strings; rejecting deep input here keeps the parser and the
  // recursive destructor of nlohmann::json away from it.
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        fail(ErrorCode::kInvalidFile, source + ": JSON nested deeper than " +
                                          std::to_string(max_depth) + " levels at byte " +
                                          std::to_string(i));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return nlohmann::json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    fail(ErrorCode::kInvalidFile,
         source + ": invalid JSON at byte " + std::to_string(e.byte) + ": " + e.what());
  }
}

const nlohmann::json* find(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

bool get_bool(const nlohmann::json& object, const char* key, bool fallback,
              const std::string& where) {
  const nlohmann::json* value = find(object, key);
  if (!value) return fallback;
  if (!value->is_boolean())
    fail(ErrorCode::kInvalidFile, where + ": \"" + key + "\" must be true or false");
  return value->get<bool>();
}

std::optional<std::string> get_string(const nlohmann::json& object, const char* key,
                                      const std::string& where) {
  const nlohmann::json* value = find(object, key);
  if (!value) return std::nullopt;
  return to_string(*value, where + ": \"" + key + "\"");
}

int64_t to_int(const nlohmann::json& value, int64_t min, int64_t max, const std::string& where) {
  int64_t v;
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(max))
      fail(ErrorCode::kInvalidFile,
           where + ": " + std::to_string(u) + " exceeds " + std::to_string(max));
    v = static_cast<int64_t>(u);
  } else if (value.is_number_integer()) {
    v = value.get<int64_t>();
  } else {
    fail(ErrorCode::kInvalidFile, where + ": expected an integer, got " + value.type_name());
  }
  if (v < min || v > max)
    fail(ErrorCode::kInvalidFile, where + ": " + std::to_string(v) + " is outside [" +
                                      std::to_string(min) + ", " + std::to_string(max) + "]");
  return v;
}

const std::string& to_string(const nlohmann::json& value, const std::string& where) {
  if (!value.is_string())
    fail(ErrorCode::kInvalidFile, where + ": expected a string, got " + value.type_name());
  return value.get_ref<const std::string&>();
}

std::optional<std::string> token_content(const nlohmann::json& object, const char* key) {
  const nlohmann::json* value = find(object, key);
  if (!value) return std::nullopt;
  if (value->is_string()) return value->get<std::string>();
  if (value->is_object()) {
    const nlohmann::json* content = find(*value, "content");
    if (content && content->is_string()) return content->get<std::string>();
  }
  return std::nullopt;
}

}  // namespace hearth::json_util
