// Helpers shared by the Jinja built-ins: argument binding, error wording, the sandbox's method
// name lists, and small string and comparison utilities.
#include "engine/template/jinja_builtins_internal.h"

#include "engine/template/jinja_text.h"

namespace hearth::jinja::detail {

Params::Params(std::string_view fn, CallArgs& args, std::initializer_list<const char*> names,
               Pos pos)
    : slots_(names.size(), nullptr), pos_(pos) {
  if (args.positional.size() > names.size())
    fail_at(pos, std::string(fn) + "() takes at most " + std::to_string(names.size()) +
                     " argument(s), got " + std::to_string(args.positional.size()));
  for (size_t k = 0; k < args.positional.size(); ++k) slots_[k] = &args.positional[k];
  for (auto& [key, value] : args.keywords) {
    size_t k = 0;
    for (const char* n : names) {
      if (key == n) break;
      ++k;
    }
    if (k == names.size())
      fail_at(pos, std::string(fn) + "() got an unexpected keyword argument '" + key + "'");
    if (slots_[k])
      fail_at(pos, std::string(fn) + "() got multiple values for argument '" + key + "'");
    slots_[k] = &value;
  }
}

const Value kEmpty = Value::string("");

[[noreturn]] void fail_type(Pos pos, const std::string& what, const Value& v) {
  fail_at(pos, what + ", not '" + type_name(v) + "'");
}

void require_defined(const Value& v, Pos pos) {
  if (v.is_undefined()) fail_at(pos, v.undefined_message());
}

std::string object_label(const Value& v) {
  if (v.is_none()) return "None";
  return std::string(type_name(v)) + " object";
}

bool is_str_method(std::string_view n) {
  static const char* kNames[] = {
      "strip",        "lstrip",       "rstrip",   "split",      "rsplit",    "splitlines",
      "startswith",   "endswith",     "upper",    "lower",      "title",     "capitalize",
      "swapcase",     "replace",      "find",     "rfind",      "index",     "rindex",
      "count",        "join",         "format",   "isdigit",    "isalpha",   "isalnum",
      "isspace",      "isupper",      "islower",  "isnumeric",  "isdecimal", "istitle",
      "zfill",        "center",       "ljust",    "rjust",      "partition", "rpartition",
      "removeprefix", "removesuffix", "casefold", "expandtabs", "encode"};
  for (const char* k : kNames)
    if (n == k) return true;
  return false;
}
bool is_dict_method(std::string_view n) {
  return n == "items" || n == "keys" || n == "values" || n == "get" || n == "copy" ||
         n == "fromkeys";
}
bool is_dict_mutator(std::string_view n) {
  return n == "pop" || n == "popitem" || n == "setdefault" || n == "update" || n == "clear";
}
bool is_list_method(std::string_view n) {
  return n == "index" || n == "count" || n == "copy";
}
bool is_list_mutator(std::string_view n) {
  return n == "append" || n == "extend" || n == "insert" || n == "pop" || n == "remove" ||
         n == "reverse" || n == "sort" || n == "clear";
}

Value missing_attr(const Value& obj, std::string_view name) {
  return Value::undefined("'" + object_label(obj) + "' has no attribute '" + std::string(name) +
                          "'");
}

size_t str_length(const std::string& s) {
  return code_point_count(s);
}

std::string join_values(const std::vector<Value>& items, const std::string& sep) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) {
    if (k) out += sep;
    append_str(out, items[k]);
  }
  return out;
}

int compare_or_fail(const Value& a, const Value& b, Pos pos) {
  int r = 0;
  if (!try_compare(a, b, r))
    fail_at(pos, std::string("'<' not supported between instances of '") + type_name(a) +
                     "' and '" + type_name(b) + "'");
  return r == 2 ? 0 : r;
}

}  // namespace hearth::jinja::detail
