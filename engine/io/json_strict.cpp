#include "engine/io/json_strict.h"

#include <fstream>
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

namespace {

// Builds the document from SAX events, refusing duplicate keys and deep nesting as they come.
// (nlohmann's callback parser re-scans the parent object at every object end, which is
// quadratic in the number of keys: a 90 MB safetensors header would take hours.)
class StrictDomBuilder {
 public:
  using json = nlohmann::json;

  StrictDomBuilder(json& root, const std::string& what, int max_depth, uint64_t base_offset)
      : root_(root), what_(what), max_depth_(max_depth), base_offset_(base_offset) {}

  bool null() { return add(nullptr); }
  bool boolean(bool v) { return add(v); }
  bool number_integer(json::number_integer_t v) { return add(v); }
  bool number_unsigned(json::number_unsigned_t v) { return add(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return add(v); }
  bool string(json::string_t& v) { return add(std::move(v)); }
  bool binary(json::binary_t& v) { return add(json::binary(std::move(v))); }

  bool start_object(std::size_t /*unknown*/) { return open(json::value_t::object); }
  bool start_array(std::size_t /*unknown*/) { return open(json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(json::string_t& k) {
    json& object = *stack_.back();
    if (object.find(k) != object.end()) {
      fail(ErrorCode::kInvalidFile, what_ + ": duplicate key \"" + printable(k) + "\"");
    }
    slot_ = &object[k];
    return true;
  }

  bool parse_error(std::size_t position, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    fail_json_syntax(what_, position, base_offset_, e);
  }

 private:
  // Places a value where the parser is: the root, the next array element, or the slot of the
  // last key.
  json* place(json&& v) {
    if (stack_.empty()) {
      root_ = std::move(v);
      return &root_;
    }
    json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(std::move(v));
      return &top.back();
    }
    *slot_ = std::move(v);
    return slot_;
  }
  bool add(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json::value_t type) {
    if (static_cast<int>(stack_.size()) >= max_depth_) {
      fail(ErrorCode::kInvalidFile,
           what_ + ": JSON nested deeper than " + std::to_string(max_depth_) + " levels");
    }
    stack_.push_back(place(json(type)));
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }

  json& root_;
  const std::string& what_;
  int max_depth_;
  uint64_t base_offset_;
  std::vector<json*> stack_;
  json* slot_ = nullptr;
};

}  // namespace

void fail_json_syntax(const std::string& what, std::size_t position, uint64_t base_offset,
                      const std::exception& e) {
  std::string detail = e.what();
  if (auto pos = detail.find("parse error"); pos != std::string::npos) detail = detail.substr(pos);
  const uint64_t at = base_offset + (position > 0 ? position - 1 : 0);
  // The parser quotes the bytes it last read, which may be the invalid UTF-8 itself.
  fail(ErrorCode::kInvalidFile, what + ": invalid JSON at byte " + std::to_string(at) + ": " +
                                    printable(detail, /*escape_high=*/true));
}

void check_json_depth(std::string_view text, const std::string& what, int max_depth,
                      uint64_t base_offset) {
  if (auto at = first_too_deep(text, max_depth)) {
    fail(ErrorCode::kInvalidFile, what + ": JSON nested deeper than " + std::to_string(max_depth) +
                                      " levels at byte " + std::to_string(base_offset + *at));
  }
}

nlohmann::json parse_json_strict(std::string_view text, const std::string& what, int max_depth,
                                 uint64_t base_offset) {
  check_json_depth(text, what, max_depth, base_offset);
  nlohmann::json root;
  StrictDomBuilder builder(root, what, max_depth, base_offset);
  try {
    nlohmann::json::sax_parse(text.begin(), text.end(), &builder,
                              nlohmann::json::input_format_t::json, /*strict=*/true,
                              /*ignore_comments=*/false);
  } catch (const nlohmann::json::exception& e) {  // e.g. number overflow ("1e400")
    fail(ErrorCode::kInvalidFile, what + ": invalid JSON: " + printable(e.what(), true));
  }
  return root;
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
