#include "engine/io/json_strict.h"

#include <fstream>
#include <unordered_set>
#include <vector>

#include "engine/core/error.h"
#include "engine/io/mapped_file.h"

namespace hearth {

namespace {

// Finds the first byte at which the bracket nesting exceeds max_depth, skipping string contents.
// Runs before the parser so that hostile 100k-deep documents never reach recursive code.
std::optional<size_t> first_too_deep(std::string_view text, int max_depth) {
  int depth = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      if (++depth > max_depth) return i;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::nullopt;
}

}  // namespace

nlohmann::json parse_json_strict(std::string_view text, const std::string& what, int max_depth,
                                 uint64_t base_offset) {
  if (auto at = first_too_deep(text, max_depth)) {
    fail(ErrorCode::kInvalidFile, what + ": JSON nested deeper than " + std::to_string(max_depth) +
                                      " levels at byte " + std::to_string(base_offset + *at));
  }
  // One set of seen keys per open object; the callback sees keys in document order.
  std::vector<std::unordered_set<std::string>> seen;
  auto callback = [&](int /*depth*/, nlohmann::json::parse_event_t event,
                      nlohmann::json& parsed) -> bool {
    using E = nlohmann::json::parse_event_t;
    switch (event) {
      case E::object_start:
        seen.emplace_back();
        break;
      case E::object_end:
        if (!seen.empty()) seen.pop_back();
        break;
      case E::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!seen.empty() && !seen.back().insert(key).second) {
          fail(ErrorCode::kInvalidFile, what + ": duplicate key \"" + printable(key) + "\"");
        }
        break;
      }
      default:
        break;
    }
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), callback, /*allow_exceptions=*/true,
                                 /*ignore_comments=*/false);
  } catch (const nlohmann::json::parse_error& e) {
    // e.byte is 1-based; e.what() already names the defect (including invalid UTF-8).
    const uint64_t at = base_offset + (e.byte > 0 ? e.byte - 1 : 0);
    std::string detail = e.what();
    if (auto pos = detail.find("parse error"); pos != std::string::npos) {
      detail = detail.substr(pos);
    }
    // The parser quotes the bytes it last read, which may be the invalid UTF-8 itself.
    fail(ErrorCode::kInvalidFile, what + ": invalid JSON at byte " + std::to_string(at) + ": " +
                                      printable(detail, /*escape_high=*/true));
  } catch (const nlohmann::json::exception& e) {
    fail(ErrorCode::kInvalidFile, what + ": invalid JSON: " + e.what());
  }
}

std::string read_text_file(const std::string& path, uint64_t max_bytes) {
  const auto file = MappedFile::open(path);
  if (file->size() > max_bytes) {
    fail(ErrorCode::kInvalidFile, path + ": " + std::to_string(file->size()) +
                                      " bytes is larger than the " + std::to_string(max_bytes) +
                                      " bytes allowed for this file");
  }
  return std::string(reinterpret_cast<const char*>(file->data()), file->size());
}

const char* json_kind(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::null:
      return "null";
    case nlohmann::json::value_t::object:
      return "an object";
    case nlohmann::json::value_t::array:
      return "an array";
    case nlohmann::json::value_t::string:
      return "a string";
    case nlohmann::json::value_t::boolean:
      return "a boolean";
    case nlohmann::json::value_t::number_integer:
      return "a negative integer";
    case nlohmann::json::value_t::number_unsigned:
      return "an unsigned integer";
    case nlohmann::json::value_t::number_float:
      return "a floating-point number";
    case nlohmann::json::value_t::binary:
      return "binary data";
    case nlohmann::json::value_t::discarded:
      return "nothing";
  }
  return "a value";
}

}  // namespace hearth
