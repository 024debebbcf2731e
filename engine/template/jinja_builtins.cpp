#include "engine/template/jinja_builtins.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <ctime>
#include <functional>
#include <initializer_list>
#include <limits>

#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {
namespace {

// Binds a call's positional and keyword arguments to a Python-style parameter list.
class Params {
 public:
  Params(std::string_view fn, CallArgs& args, std::initializer_list<const char*> names, Pos pos)
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
  bool has(size_t k) const { return slots_[k] != nullptr; }
  const Value* get(size_t k) const { return slots_[k]; }
  const Value& at(size_t k, const Value& fallback) const {
    return slots_[k] ? *slots_[k] : fallback;
  }
  bool flag(size_t k, bool fallback) const { return slots_[k] ? truthy(*slots_[k]) : fallback; }
  int64_t integer(size_t k, int64_t fallback, const char* what) const {
    if (!slots_[k]) return fallback;
    if (!slots_[k]->is_integral())
      fail_at(pos_, std::string(what) + " must be an integer, not '" + type_name(*slots_[k]) + "'");
    return slots_[k]->as_int();
  }
  const std::string& string(size_t k, const char* what) const {
    if (!slots_[k] || !slots_[k]->is_string())
      fail_at(pos_, std::string(what) + " must be a string");
    return slots_[k]->as_string();
  }

 private:
  std::vector<const Value*> slots_;
  Pos pos_;
};

const Value kNone = Value::none();
const Value kEmpty = Value::string("");

Value str_value(std::string s) {
  return Value::string(std::move(s));
}

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

// Attribute names that exist on Python's str, dict and list, split into the methods templates
// may call and the mutating ones the immutable sandbox refuses.
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

// A method looked up without being called at once (e.g. passed to a filter, or stored).
struct BoundMethod final : Function {
  BoundMethod(Value s, std::string n) : Function(std::move(n)), self(std::move(s)) {}
  Value call(Interpreter& in, CallArgs& args, Pos pos) override {
    Value result;
    if (!call_method(in, self, name, args, pos, result))
      fail_at(pos, "'" + object_label(self) + "' has no attribute '" + name + "'");
    return result;
  }
  Value self;
};

Value unsafe(const Value& obj, std::string_view name) {
  return Value::undefined("access to attribute '" + std::string(name) + "' of '" + type_name(obj) +
                          "' object is unsafe");
}

Value missing_attr(const Value& obj, std::string_view name) {
  return Value::undefined("'" + object_label(obj) + "' has no attribute '" + std::string(name) +
                          "'");
}

// Resolves a (possibly negative) index into [0, n); false when out of range.
bool resolve_index(int64_t i, size_t n, size_t& out) {
  const auto sn = static_cast<int64_t>(n);
  if (i < 0) i += sn;
  if (i < 0 || i >= sn) return false;
  out = static_cast<size_t>(i);
  return true;
}

Value char_at(const std::string& s, size_t index) {
  const auto offsets = code_point_offsets(s);
  return str_value(s.substr(offsets[index], offsets[index + 1] - offsets[index]));
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

// --- string methods --------------------------------------------------------------------------

std::vector<std::string> split_whitespace(const std::string& s, int64_t maxsplit, bool from_right) {
  std::vector<std::pair<size_t, size_t>> words;  // byte ranges
  size_t pos = 0;
  while (pos < s.size()) {
    size_t q = pos;
    if (is_py_space(next_code_point(s, q))) {
      pos = q;
      continue;
    }
    const size_t start = pos;
    while (pos < s.size()) {
      q = pos;
      if (is_py_space(next_code_point(s, q))) break;
      pos = q;
    }
    words.emplace_back(start, pos);
  }
  std::vector<std::string> out;
  if (maxsplit < 0 || static_cast<size_t>(maxsplit) >= words.size()) {
    for (auto [b, e] : words) out.push_back(s.substr(b, e - b));
    return out;
  }
  const auto m = static_cast<size_t>(maxsplit);
  if (!from_right) {
    for (size_t k = 0; k < m; ++k)
      out.push_back(s.substr(words[k].first, words[k].second - words[k].first));
    std::string rest = s.substr(words[m].first);
    out.push_back(py_strip(rest, nullptr, false, true));
  } else {
    const size_t first_kept = words.size() - m;
    std::string rest = s.substr(0, words[first_kept - 1].second);
    out.push_back(py_strip(rest, nullptr, true, false));
    for (size_t k = first_kept; k < words.size(); ++k)
      out.push_back(s.substr(words[k].first, words[k].second - words[k].first));
  }
  return out;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit,
                                   bool from_right, Pos pos) {
  if (sep.empty()) fail_at(pos, "empty separator");
  std::vector<std::string> out;
  if (!from_right) {
    size_t start = 0;
    while (maxsplit != 0) {
      const size_t f = s.find(sep, start);
      if (f == std::string::npos) break;
      out.push_back(s.substr(start, f - start));
      start = f + sep.size();
      if (maxsplit > 0) --maxsplit;
    }
    out.push_back(s.substr(start));
    return out;
  }
  size_t end = s.size();
  while (maxsplit != 0 && end >= sep.size()) {
    const size_t f = s.rfind(sep, end - sep.size());
    if (f == std::string::npos) break;
    out.push_back(s.substr(f + sep.size(), end - f - sep.size()));
    end = f;
    if (maxsplit > 0) --maxsplit;
  }
  out.push_back(s.substr(0, end));
  std::reverse(out.begin(), out.end());
  return out;
}

Value string_list(const std::vector<std::string>& parts) {
  std::vector<Value> items;
  items.reserve(parts.size());
  for (const auto& p : parts) items.push_back(str_value(p));
  return Value::list(std::move(items));
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count, Interpreter& in, Pos pos) {
  std::string out;
  if (old.empty()) {  // Python inserts repl between every character
    const auto offsets = code_point_offsets(s);
    const size_t n = offsets.size() - 1;
    int64_t done = 0;
    for (size_t k = 0; k <= n; ++k) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      if (k < n) out.append(s, offsets[k], offsets[k + 1] - offsets[k]);
      in.check_string_size(out.size(), pos);
    }
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    const size_t f = s.find(old, start);
    if (f == std::string::npos) break;
    out.append(s, start, f - start);
    out += repl;
    start = f + old.size();
    ++done;
    in.check_string_size(out.size(), pos);
  }
  out.append(s, start);
  return out;
}

bool all_code_points(const std::string& s, bool (*pred)(char32_t)) {
  if (s.empty()) return false;
  for (size_t p = 0; p < s.size();)
    if (!pred(next_code_point(s, p))) return false;
  return true;
}

// Python's str.format with positional ({}, {0}) and named ({name}) fields, str() conversion only.
std::string py_format(const std::string& fmt, const CallArgs& args, Pos pos) {
  std::string out;
  size_t auto_index = 0;
  for (size_t k = 0; k < fmt.size(); ++k) {
    const char c = fmt[k];
    if (c == '}') {
      if (k + 1 < fmt.size() && fmt[k + 1] == '}') {
        out += '}';
        ++k;
        continue;
      }
      fail_at(pos, "single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
      continue;
    }
    const size_t close = fmt.find('}', k);
    if (close == std::string::npos) fail_at(pos, "single '{' encountered in format string");
    const std::string field = fmt.substr(k + 1, close - k - 1);
    if (field.find_first_of(":!.[") != std::string::npos)
      fail_at(pos, "format specs and conversions are not supported in str.format");
    const Value* v = nullptr;
    if (field.empty() ||
        std::all_of(field.begin(), field.end(), [](char d) { return d >= '0' && d <= '9'; })) {
      size_t index = auto_index++;
      if (!field.empty()) index = static_cast<size_t>(std::stoul(field.substr(0, 9)));
      if (index >= args.positional.size())
        fail_at(pos, "Replacement index out of range for format");
      v = &args.positional[index];
    } else {
      for (const auto& [key, value] : args.keywords)
        if (key == field) v = &value;
      if (!v) fail_at(pos, "missing format argument '" + field + "'");
    }
    append_str(out, *v);
    k = close;
  }
  return out;
}

bool string_method(Interpreter& in, const std::string& s, std::string_view name, CallArgs& args,
                   Pos pos, Value& result) {
  auto chars_arg = [&](const char* fn) -> const std::string* {
    Params p(fn, args, {"chars"}, pos);
    if (!p.has(0) || p.get(0)->is_none()) return nullptr;
    if (!p.get(0)->is_string())
      fail_type(pos, std::string(fn) + " arg must be None or str", *p.get(0));
    return &p.get(0)->as_string();
  };
  if (name == "strip") {
    result = str_value(py_strip(s, chars_arg("strip"), true, true));
  } else if (name == "lstrip") {
    result = str_value(py_strip(s, chars_arg("lstrip"), true, false));
  } else if (name == "rstrip") {
    result = str_value(py_strip(s, chars_arg("rstrip"), false, true));
  } else if (name == "split" || name == "rsplit") {
    Params p(name, args, {"sep", "maxsplit"}, pos);
    const int64_t maxsplit = p.integer(1, -1, "maxsplit");
    const bool right = name == "rsplit";
    if (!p.has(0) || p.get(0)->is_none()) {
      result = string_list(split_whitespace(s, maxsplit, right));
    } else {
      result = string_list(split_sep(s, p.string(0, "sep"), maxsplit, right, pos));
    }
    in.charge(s.size(), pos);
  } else if (name == "splitlines") {
    Params p(name, args, {"keepends"}, pos);
    result = string_list(py_splitlines(s));
  } else if (name == "startswith" || name == "endswith") {
    Params p(name, args, {"prefix", "start", "end"}, pos);
    if (!p.has(0)) fail_at(pos, std::string(name) + "() takes at least 1 argument");
    std::vector<std::string> options;
    const Value& arg = *p.get(0);
    if (arg.is_string()) {
      options.push_back(arg.as_string());
    } else if (arg.is_list() && arg.as_list().is_tuple) {
      for (const Value& v : arg.as_list().items) {
        if (!v.is_string())
          fail_type(pos, "tuple for " + std::string(name) + " must only contain str", v);
        options.push_back(v.as_string());
      }
    } else {
      fail_type(pos, std::string(name) + " first arg must be str or a tuple of str", arg);
    }
    if (p.has(1) || p.has(2)) fail_at(pos, std::string(name) + "() start/end are not supported");
    bool r = false;
    for (const auto& o : options) {
      if (name == "startswith"
              ? s.compare(0, o.size(), o) == 0 && s.size() >= o.size()
              : s.size() >= o.size() && s.compare(s.size() - o.size(), o.size(), o) == 0)
        r = true;
    }
    result = Value::boolean(r);
  } else if (name == "upper") {
    result = str_value(upper_text(s));
  } else if (name == "lower" || name == "casefold") {
    result = str_value(lower_text(s));
  } else if (name == "title") {
    result = str_value(py_title(s));
  } else if (name == "capitalize") {
    result = str_value(py_capitalize(s));
  } else if (name == "swapcase") {
    std::string out;
    for (size_t q = 0; q < s.size();) {
      const size_t start = q;
      next_code_point(s, q);
      const std::string one = s.substr(start, q - start);
      const std::string up = upper_text(one);
      out += up != one ? up : lower_text(one);
    }
    result = str_value(std::move(out));
  } else if (name == "replace") {
    Params p(name, args, {"old", "new", "count"}, pos);
    const std::string& old = p.string(0, "replace() old");
    const std::string& repl = p.string(1, "replace() new");
    result = str_value(replace_all(s, old, repl, p.integer(2, -1, "count"), in, pos));
  } else if (name == "find" || name == "rfind" || name == "index" || name == "rindex" ||
             name == "count") {
    Params p(name, args, {"sub", "start", "end"}, pos);
    const std::string& sub = p.string(0, std::string(name).c_str());
    if (p.has(1) || p.has(2)) fail_at(pos, std::string(name) + "() start/end are not supported");
    if (name == "count") {
      int64_t n = 0;
      if (sub.empty()) {
        n = static_cast<int64_t>(str_length(s)) + 1;
      } else {
        for (size_t f = s.find(sub); f != std::string::npos; f = s.find(sub, f + sub.size())) ++n;
      }
      result = Value::integer(n);
    } else {
      const bool right = name == "rfind" || name == "rindex";
      const size_t f = right ? s.rfind(sub) : s.find(sub);
      if (f == std::string::npos) {
        if (name == "index" || name == "rindex") fail_at(pos, "substring not found");
        result = Value::integer(-1);
      } else {
        result = Value::integer(
            static_cast<int64_t>(code_point_count(std::string_view(s).substr(0, f))));
      }
    }
  } else if (name == "join") {
    Params p(name, args, {"iterable"}, pos);
    if (!p.has(0)) fail_at(pos, "join() takes exactly one argument");
    std::vector<Value> items = iterate(*p.get(0), pos);
    for (const Value& v : items)
      if (!v.is_string()) fail_type(pos, "sequence item: expected str instance", v);
    std::string out = join_values(items, s);
    in.check_string_size(out.size(), pos);
    in.charge(out.size(), pos);
    result = str_value(std::move(out));
  } else if (name == "format") {
    std::string out = py_format(s, args, pos);
    in.check_string_size(out.size(), pos);
    result = str_value(std::move(out));
  } else if (name == "isdigit" || name == "isnumeric" || name == "isdecimal") {
    result = Value::boolean(all_code_points(s, [](char32_t c) { return c >= '0' && c <= '9'; }));
  } else if (name == "isalpha") {
    result = Value::boolean(all_code_points(s, [](char32_t c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= 0xC0 && !is_py_space(c));
    }));
  } else if (name == "isalnum") {
    result = Value::boolean(all_code_points(s, [](char32_t c) {
      return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
             (c >= 0xC0 && !is_py_space(c));
    }));
  } else if (name == "isspace") {
    result = Value::boolean(all_code_points(s, is_py_space));
  } else if (name == "isupper" || name == "islower") {
    const bool want_upper = name == "isupper";
    const std::string up = upper_text(s), low = lower_text(s);
    const bool has_cased = up != low;
    result = Value::boolean(has_cased && (want_upper ? s == up : s == low));
  } else if (name == "istitle") {
    result = Value::boolean(!s.empty() && py_title(s) == s && upper_text(s) != lower_text(s));
  } else if (name == "zfill" || name == "center" || name == "ljust" || name == "rjust") {
    Params p(name, args, {"width", "fillchar"}, pos);
    const int64_t width = p.integer(0, 0, "width");
    std::string fill = " ";
    if (name != "zfill" && p.has(1)) fill = p.string(1, "fillchar");
    const auto len = static_cast<int64_t>(str_length(s));
    if (width > static_cast<int64_t>(1 << 20))
      in.check_string_size(static_cast<size_t>(width), pos);
    if (width <= len) {
      result = str_value(s);
    } else {
      const auto pad = static_cast<size_t>(width - len);
      std::string out;
      auto repeat = [&](size_t n) {
        for (size_t k = 0; k < n; ++k) out += fill;
      };
      if (name == "zfill") {
        size_t sign = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
        out = s.substr(0, sign) + std::string(pad, '0') + s.substr(sign);
      } else if (name == "ljust") {
        out = s;
        repeat(pad);
      } else if (name == "rjust") {
        repeat(pad);
        out += s;
      } else {
        // Python's centering puts the odd extra character on the left when width is odd.
        const size_t left = pad / 2 + (pad & static_cast<size_t>(width) & 1);
        repeat(left);
        out += s;
        repeat(pad - left);
      }
      result = str_value(std::move(out));
    }
  } else if (name == "partition" || name == "rpartition") {
    Params p(name, args, {"sep"}, pos);
    const std::string& sep = p.string(0, "sep");
    if (sep.empty()) fail_at(pos, "empty separator");
    const size_t f = name == "partition" ? s.find(sep) : s.rfind(sep);
    std::vector<Value> parts;
    if (f == std::string::npos) {
      if (name == "partition") {
        parts = {str_value(s), kEmpty, kEmpty};
      } else {
        parts = {kEmpty, kEmpty, str_value(s)};
      }
    } else {
      parts = {str_value(s.substr(0, f)), str_value(sep), str_value(s.substr(f + sep.size()))};
    }
    result = Value::list(std::move(parts), true);
  } else if (name == "removeprefix" || name == "removesuffix") {
    Params p(name, args, {"affix"}, pos);
    const std::string& a = p.string(0, std::string(name).c_str());
    if (name == "removeprefix") {
      result = str_value(s.compare(0, a.size(), a) == 0 ? s.substr(a.size()) : s);
    } else {
      result = str_value(s.size() >= a.size() && s.compare(s.size() - a.size(), a.size(), a) == 0
                             ? s.substr(0, s.size() - a.size())
                             : s);
    }
  } else {
    return false;
  }
  return true;
}

// --- dict and list methods ---------------------------------------------------------------------

Value dict_items(const DictObj& d) {
  std::vector<Value> items;
  items.reserve(d.items.size());
  for (const auto& [k, v] : d.items) items.push_back(Value::list({str_value(k), v}, true));
  return Value::list(std::move(items));
}

bool dict_method(const Value& self, std::string_view name, CallArgs& args, Pos pos, Value& result) {
  const DictObj& d = self.as_dict();
  if (name == "items") {
    Params p(name, args, {}, pos);
    result = dict_items(d);
  } else if (name == "keys") {
    Params p(name, args, {}, pos);
    std::vector<Value> keys;
    for (const auto& kv : d.items) keys.push_back(str_value(kv.first));
    result = Value::list(std::move(keys));
  } else if (name == "values") {
    Params p(name, args, {}, pos);
    std::vector<Value> values;
    for (const auto& kv : d.items) values.push_back(kv.second);
    result = Value::list(std::move(values));
  } else if (name == "get") {
    Params p(name, args, {"key", "default"}, pos);
    if (!p.has(0)) fail_at(pos, "get expected at least 1 argument, got 0");
    const Value* v = p.get(0)->is_string() ? d.find(p.get(0)->as_string()) : nullptr;
    result = v ? *v : p.at(1, kNone);
  } else if (name == "copy") {
    result = self;
  } else if (is_dict_mutator(name)) {
    fail_at(pos, "dicts cannot be modified in chat templates (" + std::string(name) + "())");
  } else {
    return false;
  }
  return true;
}

bool list_method(const Value& self, std::string_view name, CallArgs& args, Pos pos, Value& result) {
  const auto& items = self.as_list().items;
  if (name == "index" || name == "count") {
    Params p(name, args, {"value"}, pos);
    if (!p.has(0)) fail_at(pos, std::string(name) + "() takes exactly one argument");
    int64_t n = 0;
    for (size_t k = 0; k < items.size(); ++k) {
      if (!equals(items[k], *p.get(0))) continue;
      if (name == "index") {
        result = Value::integer(static_cast<int64_t>(k));
        return true;
      }
      ++n;
    }
    if (name == "index") fail_at(pos, "value is not in list");
    result = Value::integer(n);
  } else if (name == "copy") {
    result = self;
  } else if (is_list_mutator(name)) {
    fail_at(pos, "lists cannot be modified in chat templates (" + std::string(name) +
                     "()); use a namespace and '+' instead");
  } else {
    return false;
  }
  return true;
}

// --- filters -----------------------------------------------------------------------------------

// Jinja's attribute getter for map/selectattr/sort: "a.b.0" walks items (then attributes).
Value attribute_of(const Value& item, const std::string& path, Pos pos) {
  Value cur = item;
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    int64_t index = 0;
    const auto res = std::from_chars(part.data(), part.data() + part.size(), index);
    if (!part.empty() && res.ec == std::errc() && res.ptr == part.data() + part.size()) {
      cur = get_item(cur, Value::integer(index), pos);
    } else {
      cur = get_item(cur, str_value(part), pos);
    }
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return str_value(lower_text(v.as_string()));
  return v;
}

int compare_or_fail(const Value& a, const Value& b, Pos pos) {
  int r = 0;
  if (!try_compare(a, b, r))
    fail_at(pos, std::string("'<' not supported between instances of '") + type_name(a) +
                     "' and '" + type_name(b) + "'");
  return r == 2 ? 0 : r;
}

std::string html_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Python's int()/float() strip ASCII whitespace from ASCII text (and Unicode spaces otherwise).
std::string strip_number_text(std::string_view text) {
  const bool ascii = std::all_of(text.begin(), text.end(),
                                 [](char c) { return static_cast<unsigned char>(c) < 0x80; });
  if (!ascii) return py_strip(text, nullptr, true, true);
  static const std::string kAsciiSpace = " \t\n\r\v\f";
  return py_strip(text, &kAsciiSpace, true, true);
}

bool parse_py_int(std::string_view text, int base, int64_t& out) {
  std::string s = strip_number_text(text);
  std::string digits;
  for (size_t k = 0; k < s.size(); ++k) {
    if (s[k] == '_' && k > 0 && k + 1 < s.size()) continue;
    digits += s[k];
  }
  size_t start = (!digits.empty() && (digits[0] == '+' || digits[0] == '-')) ? 1 : 0;
  const bool negative = start && digits[0] == '-';
  if (start == digits.size()) return false;
  if (digits.size() > start + 2 && digits[start] == '0') {  // 0x / 0o / 0b prefixes
    const char p = static_cast<char>(digits[start + 1] | 0x20);
    const int prefix_base = p == 'x' ? 16 : (p == 'o' ? 8 : (p == 'b' ? 2 : 0));
    if (prefix_base && (base == prefix_base || base == 0)) {
      base = prefix_base;
      digits.erase(start, 2);
    }
  }
  if (base == 0) base = 10;
  uint64_t mag = 0;
  const auto res = std::from_chars(digits.data() + start, digits.data() + digits.size(), mag, base);
  if (res.ec != std::errc() || res.ptr != digits.data() + digits.size()) return false;
  if (mag > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) + (negative ? 1 : 0))
    return false;
  out = negative ? static_cast<int64_t>(0 - mag) : static_cast<int64_t>(mag);
  return true;
}

bool parse_py_float(std::string_view text, double& out) {
  std::string s = lower_text(strip_number_text(text));
  std::string clean;
  for (size_t k = 0; k < s.size(); ++k)
    if (!(s[k] == '_' && k > 0 && k + 1 < s.size())) clean += s[k];
  size_t start = 0;
  bool negative = false;
  if (!clean.empty() && (clean[0] == '+' || clean[0] == '-')) {
    negative = clean[0] == '-';
    start = 1;
  }
  const std::string body = clean.substr(start);
  if (body == "inf" || body == "infinity") {
    out = negative ? -HUGE_VAL : HUGE_VAL;
    return true;
  }
  if (body == "nan") {
    out = std::nan("");
    return true;
  }
  if (body.empty()) return false;
  double v = 0;
  const auto res = std::from_chars(body.data(), body.data() + body.size(), v);
  if (res.ptr != body.data() + body.size()) return false;
  if (res.ec == std::errc::result_out_of_range)
    v = HUGE_VAL;  // underflow is close enough to 0
  else if (res.ec != std::errc())
    return false;
  out = negative ? -v : v;
  return true;
}

Value filter_tojson(Interpreter& in, const Value& v, CallArgs& args, Pos pos) {
  Params p("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"}, pos);
  JsonOptions o;
  o.ensure_ascii = p.flag(0, false);
  o.sort_keys = p.flag(3, false);
  if (p.has(1) && !p.get(1)->is_none()) {
    const Value& indent = *p.get(1);
    o.pretty = true;
    if (indent.is_string()) {
      o.indent = indent.as_string();
    } else if (indent.is_integral()) {
      o.indent =
          std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 256)), ' ');
    } else {
      fail_type(pos, "tojson indent must be an integer or a string", indent);
    }
    o.item_separator = ",";
  }
  if (p.has(2) && !p.get(2)->is_none()) {
    const Value& sep = *p.get(2);
    if (!sep.is_list() || sep.as_list().items.size() != 2 || !sep.as_list().items[0].is_string() ||
        !sep.as_list().items[1].is_string())
      fail_at(pos, "tojson separators must be a pair of strings");
    o.item_separator = sep.as_list().items[0].as_string();
    o.key_separator = sep.as_list().items[1].as_string();
  }
  std::string out;
  append_json(out, v, o, pos);
  in.check_string_size(out.size(), pos);
  in.charge(out.size(), pos);
  return str_value(std::move(out));
}

Value filter_indent(const Value& v, CallArgs& args, Pos pos) {
  Params p("indent", args, {"width", "first", "blank"}, pos);
  std::string indention = "    ";
  if (p.has(0)) {
    if (p.get(0)->is_string()) {
      indention = p.get(0)->as_string();
    } else {
      indention = std::string(
          static_cast<size_t>(std::clamp<int64_t>(p.integer(0, 4, "width"), 0, 1024)), ' ');
    }
  }
  const std::string s = to_str(v) + "\n";
  const std::vector<std::string> lines = py_splitlines(s);
  std::string rv;
  if (p.flag(2, false)) {
    for (size_t k = 0; k < lines.size(); ++k) {
      if (k) rv += "\n" + indention;
      rv += lines[k];
    }
  } else if (!lines.empty()) {
    rv = lines[0];
    for (size_t k = 1; k < lines.size(); ++k) {
      rv += "\n";
      if (!lines[k].empty()) rv += indention;
      rv += lines[k];
    }
  }
  if (p.flag(1, false)) rv = indention + rv;
  return str_value(std::move(rv));
}

// select / reject / selectattr / rejectattr
Value filter_select(Interpreter& in, std::string_view name, const Value& v, CallArgs& args,
                    Pos pos) {
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_matches = name == "select" || name == "selectattr";
  size_t first_test_arg = 0;
  std::string attr;
  if (by_attr) {
    if (args.positional.empty() || !args.positional[0].is_string())
      fail_at(pos, std::string(name) + "() needs an attribute name");
    attr = args.positional[0].as_string();
    first_test_arg = 1;
  }
  std::string test;
  CallArgs test_args;
  if (args.positional.size() > first_test_arg) {
    if (!args.positional[first_test_arg].is_string())
      fail_at(pos, std::string(name) + "() test name must be a string");
    test = args.positional[first_test_arg].as_string();
    if (!has_test(test)) fail_at(pos, "no test named '" + test + "'");
    test_args.positional.assign(args.positional.begin() + static_cast<long>(first_test_arg) + 1,
                                args.positional.end());
  }
  test_args.keywords = args.keywords;
  std::vector<Value> out;
  for (const Value& item : iterate(v, pos)) {
    const Value subject = by_attr ? attribute_of(item, attr, pos) : item;
    bool r;
    if (test.empty()) {
      r = truthy(subject);
    } else {
      CallArgs a = test_args;
      r = apply_test(in, test, subject, a, pos);
    }
    if (r == keep_matches) out.push_back(item);
  }
  in.charge(out.size(), pos);
  return Value::list(std::move(out));
}

Value filter_map(Interpreter& in, const Value& v, CallArgs& args, Pos pos) {
  std::vector<Value> items = iterate(v, pos);
  std::vector<Value> out;
  out.reserve(items.size());
  const Value* attr = nullptr;
  const Value* fallback = nullptr;
  for (const auto& [k, val] : args.keywords) {
    if (k == "attribute") attr = &val;
    if (k == "default") fallback = &val;
  }
  if (attr) {
    if (!attr->is_string()) fail_at(pos, "map(attribute=...) must be a string");
    for (const Value& item : items) {
      Value r = attribute_of(item, attr->as_string(), pos);
      if (r.is_undefined() && fallback) r = *fallback;
      out.push_back(std::move(r));
    }
  } else {
    if (args.positional.empty() || !args.positional[0].is_string())
      fail_at(pos, "map() needs a filter name or attribute=");
    const std::string filter = args.positional[0].as_string();
    if (!has_filter(filter)) fail_at(pos, "no filter named '" + filter + "'");
    CallArgs rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    for (const Value& item : items) {
      CallArgs a = rest;
      out.push_back(apply_filter(in, filter, item, a, pos));
    }
  }
  in.charge(out.size(), pos);
  return Value::list(std::move(out));
}

Value filter_sort(Interpreter& in, std::string_view name, const Value& v, CallArgs& args, Pos pos) {
  Params p(name, args, {"reverse", "case_sensitive", "attribute"}, pos);
  const bool reverse = p.flag(0, false);
  const bool cs = p.flag(1, false);
  std::string attr;
  if (p.has(2) && !p.get(2)->is_none()) attr = p.string(2, "attribute");
  std::vector<Value> items = iterate(v, pos);
  std::vector<std::pair<Value, size_t>> keyed;
  keyed.reserve(items.size());
  for (size_t k = 0; k < items.size(); ++k)
    keyed.emplace_back(sort_key(attr.empty() ? items[k] : attribute_of(items[k], attr, pos), cs),
                       k);
  in.charge(items.size() * 8, pos);
  std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
    const int c = compare_or_fail(a.first, b.first, pos);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  out.reserve(items.size());
  for (auto& [key, k] : keyed) out.push_back(items[k]);
  return Value::list(std::move(out));
}

Value filter_minmax(std::string_view name, const Value& v, CallArgs& args, Pos pos) {
  Params p(name, args, {"case_sensitive", "attribute"}, pos);
  const bool cs = p.flag(0, false);
  std::string attr;
  if (p.has(1) && !p.get(1)->is_none()) attr = p.string(1, "attribute");
  const std::vector<Value> items = iterate(v, pos);
  if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
  size_t best = 0;
  Value best_key = sort_key(attr.empty() ? items[0] : attribute_of(items[0], attr, pos), cs);
  for (size_t k = 1; k < items.size(); ++k) {
    Value key = sort_key(attr.empty() ? items[k] : attribute_of(items[k], attr, pos), cs);
    const int c = compare_or_fail(key, best_key, pos);
    if (name == "min" ? c < 0 : c > 0) {
      best = k;
      best_key = std::move(key);
    }
  }
  return items[best];
}

Value filter_unique(const Value& v, CallArgs& args, Pos pos) {
  Params p("unique", args, {"case_sensitive", "attribute"}, pos);
  const bool cs = p.flag(0, false);
  std::string attr;
  if (p.has(1) && !p.get(1)->is_none()) attr = p.string(1, "attribute");
  std::vector<Value> out, seen;
  for (const Value& item : iterate(v, pos)) {
    Value key = sort_key(attr.empty() ? item : attribute_of(item, attr, pos), cs);
    bool dup = false;
    for (const Value& s : seen)
      if (equals(s, key)) dup = true;
    if (dup) continue;
    seen.push_back(std::move(key));
    out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value filter_dictsort(const Value& v, CallArgs& args, Pos pos) {
  Params p("dictsort", args, {"case_sensitive", "by", "reverse"}, pos);
  if (!v.is_dict()) fail_type(pos, "dictsort needs a dict", v);
  const bool cs = p.flag(0, false);
  std::string by = "key";
  if (p.has(1)) by = p.string(1, "by");
  if (by != "key" && by != "value")
    fail_at(pos, "You can only sort by either \"key\" or \"value\"");
  const bool reverse = p.flag(2, false);
  std::vector<std::pair<std::string, Value>> items = v.as_dict().items;
  const bool by_value = by == "value";
  std::stable_sort(items.begin(), items.end(), [&](const auto& a, const auto& b) {
    const Value ka = sort_key(by_value ? a.second : str_value(a.first), cs);
    const Value kb = sort_key(by_value ? b.second : str_value(b.first), cs);
    const int c = compare_or_fail(ka, kb, pos);
    return reverse ? c > 0 : c < 0;
  });
  std::vector<Value> out;
  for (auto& [k, val] : items) out.push_back(Value::list({str_value(k), val}, true));
  return Value::list(std::move(out));
}

int64_t length_of(const Value& v, Pos pos) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return 0;
    case Kind::kString:
      return static_cast<int64_t>(str_length(v.as_string()));
    case Kind::kList:
      return static_cast<int64_t>(v.as_list().items.size());
    case Kind::kDict:
      return static_cast<int64_t>(v.as_dict().items.size());
    default:
      fail_at(pos, std::string("object of type '") + type_name(v) + "' has no len()");
  }
}

using FilterFn = Value (*)(Interpreter&, std::string_view, const Value&, CallArgs&, Pos);

struct FilterEntry {
  const char* name;
  FilterFn fn;
};

Value f_abs(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("abs", a, {}, pos);
  require_defined(v, pos);
  if (v.kind() == Kind::kFloat) return Value::number(std::fabs(v.as_float()));
  if (!v.is_integral())
    fail_at(pos, std::string("bad operand type for abs(): '") + type_name(v) + "'");
  if (v.as_int() == std::numeric_limits<int64_t>::min()) fail_at(pos, "integer overflow");
  return Value::integer(v.as_int() < 0 ? -v.as_int() : v.as_int());
}

Value f_attr(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("attr", a, {"name"}, pos);
  const std::string& name = p.string(0, "attr() name");
  // Only real attributes (methods, namespace fields): dict items are not attributes here.
  if (v.is_dict() && !is_dict_method(name) && !is_dict_mutator(name)) return missing_attr(v, name);
  return get_attr(v, name, pos);
}

Value f_batch(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("batch", a, {"linecount", "fill_with"}, pos);
  const int64_t n = p.integer(0, 0, "linecount");
  if (n <= 0) fail_at(pos, "batch() linecount must be positive");
  std::vector<Value> items = iterate(v, pos), out, cur;
  for (Value& item : items) {
    cur.push_back(std::move(item));
    if (static_cast<int64_t>(cur.size()) == n) {
      out.push_back(Value::list(std::move(cur)));
      cur.clear();
    }
  }
  if (!cur.empty()) {
    if (p.has(1) && !p.get(1)->is_none()) {
      in.check_list_size(static_cast<size_t>(n), pos);
      while (static_cast<int64_t>(cur.size()) < n) cur.push_back(*p.get(1));
    }
    out.push_back(Value::list(std::move(cur)));
  }
  return Value::list(std::move(out));
}

Value f_capitalize(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("capitalize", a, {}, pos);
  return str_value(py_capitalize(to_str(v)));
}

Value f_center(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("center", a, {"width"}, pos);
  CallArgs c;
  c.positional.push_back(Value::integer(p.integer(0, 80, "width")));
  Value r;
  string_method(in, to_str(v), "center", c, pos, r);
  return r;
}

Value f_default(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("default", a, {"default_value", "boolean"}, pos);
  if (v.is_undefined() || (p.flag(1, false) && !truthy(v))) return p.at(0, kEmpty);
  return v;
}

Value f_dictsort(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  return filter_dictsort(v, a, pos);
}

Value f_escape(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("escape", a, {}, pos);
  return str_value(html_escape(to_str(v)));
}

Value f_first(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("first", a, {}, pos);
  if (v.is_string()) {
    if (v.as_string().empty()) return Value::undefined("No first item, sequence was empty.");
    size_t q = 0;
    next_code_point(v.as_string(), q);
    return str_value(v.as_string().substr(0, q));
  }
  if (v.is_list()) {
    if (v.as_list().items.empty()) return Value::undefined("No first item, sequence was empty.");
    return v.as_list().items.front();
  }
  const std::vector<Value> items = iterate(v, pos);
  if (items.empty()) return Value::undefined("No first item, sequence was empty.");
  return items.front();
}

Value f_last(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("last", a, {}, pos);
  if (v.is_list()) {
    if (v.as_list().items.empty()) return Value::undefined("No last item, sequence was empty.");
    return v.as_list().items.back();
  }
  const std::vector<Value> items = iterate(v, pos);
  if (items.empty()) return Value::undefined("No last item, sequence was empty.");
  return items.back();
}

Value f_float(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("float", a, {"default"}, pos);
  require_defined(v, pos);
  const Value fallback = p.has(0) ? *p.get(0) : Value::number(0.0);
  if (v.is_number()) return Value::number(v.as_float());
  double d = 0;
  if (v.is_string() && parse_py_float(v.as_string(), d)) return Value::number(d);
  return fallback;
}

Value f_int(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("int", a, {"default", "base"}, pos);
  require_defined(v, pos);
  const Value fallback = p.has(0) ? *p.get(0) : Value::integer(0);
  const int64_t base = p.integer(1, 10, "base");
  if (v.is_integral()) return Value::integer(v.as_int());
  if (v.kind() == Kind::kFloat) {
    const double d = std::trunc(v.as_float());
    if (!std::isfinite(d) || std::fabs(d) >= 9.2e18) return fallback;
    return Value::integer(static_cast<int64_t>(d));
  }
  if (v.is_string()) {
    int64_t i = 0;
    if ((base == 0 || (base >= 2 && base <= 36)) &&
        parse_py_int(v.as_string(), static_cast<int>(base), i))
      return Value::integer(i);
    double d = 0;
    if (parse_py_float(v.as_string(), d) && std::isfinite(d) && std::fabs(d) < 9.2e18)
      return Value::integer(static_cast<int64_t>(std::trunc(d)));
  }
  return fallback;
}

Value f_indent(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  return filter_indent(v, a, pos);
}

Value f_items(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("items", a, {}, pos);
  if (v.is_undefined()) return Value::list({});
  if (!v.is_dict()) fail_at(pos, "Can only get item pairs from a mapping.");
  return dict_items(v.as_dict());
}

Value f_join(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("join", a, {"d", "attribute"}, pos);
  const std::string sep = p.has(0) ? to_str(*p.get(0)) : std::string();
  std::vector<Value> items = iterate(v, pos);
  if (p.has(1) && !p.get(1)->is_none()) {
    const std::string attr = to_str(*p.get(1));
    for (Value& item : items) item = attribute_of(item, attr, pos);
  }
  std::string out = join_values(items, sep);
  in.check_string_size(out.size(), pos);
  in.charge(out.size(), pos);
  return str_value(std::move(out));
}

Value f_length(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("length", a, {}, pos);
  return Value::integer(length_of(v, pos));
}

Value f_list(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("list", a, {}, pos);
  if (v.is_list() && !v.as_list().is_tuple) return v;
  return Value::list(iterate(v, pos));
}

Value f_lower(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("lower", a, {}, pos);
  return str_value(lower_text(to_str(v)));
}

Value f_upper(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("upper", a, {}, pos);
  return str_value(upper_text(to_str(v)));
}

Value f_map(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  return filter_map(in, v, a, pos);
}

Value f_minmax(Interpreter&, std::string_view name, const Value& v, CallArgs& a, Pos pos) {
  return filter_minmax(name, v, a, pos);
}

Value f_replace(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("replace", a, {"old", "new", "count"}, pos);
  const int64_t count = (p.has(2) && !p.get(2)->is_none()) ? p.integer(2, -1, "count") : -1;
  return str_value(
      replace_all(to_str(v), to_str(p.at(0, kEmpty)), to_str(p.at(1, kEmpty)), count, in, pos));
}

Value f_reverse(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("reverse", a, {}, pos);
  if (v.is_string()) {
    const auto offsets = code_point_offsets(v.as_string());
    std::string out;
    out.reserve(v.as_string().size());
    for (size_t k = offsets.size() - 1; k > 0; --k)
      out.append(v.as_string(), offsets[k - 1], offsets[k] - offsets[k - 1]);
    return str_value(std::move(out));
  }
  std::vector<Value> items = iterate(v, pos);
  std::reverse(items.begin(), items.end());
  return Value::list(std::move(items));
}

Value f_round(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("round", a, {"precision", "method"}, pos);
  const int64_t precision = p.integer(0, 0, "precision");
  std::string method = "common";
  if (p.has(1)) method = p.string(1, "method");
  if (!v.is_number()) fail_type(pos, "round() needs a number", v);
  const double x = v.as_float();
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "common") {
    // Python's round(): ties to even, and an int stays an int.
    if (v.is_integral() && precision >= 0) return Value::integer(v.as_int());
    if (!std::isfinite(scale) || scale == 0) return Value::number(x);
    return Value::number(std::nearbyint(x * scale) / scale);
  }
  if (method == "ceil") return Value::number(std::ceil(x * scale) / scale);
  if (method == "floor") return Value::number(std::floor(x * scale) / scale);
  fail_at(pos, "method must be common, ceil or floor");
}

Value f_safe(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("safe", a, {}, pos);
  return v;
}

Value f_select(Interpreter& in, std::string_view name, const Value& v, CallArgs& a, Pos pos) {
  return filter_select(in, name, v, a, pos);
}

Value f_sort(Interpreter& in, std::string_view name, const Value& v, CallArgs& a, Pos pos) {
  return filter_sort(in, name, v, a, pos);
}

Value f_string(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("string", a, {}, pos);
  if (v.is_string()) return v;
  std::string s = to_str(v);
  in.charge(s.size(), pos);
  return str_value(std::move(s));
}

Value f_sum(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("sum", a, {"attribute", "start"}, pos);
  std::string attr;
  if (p.has(0) && !p.get(0)->is_none()) attr = to_str(*p.get(0));
  Value total = p.has(1) ? *p.get(1) : Value::integer(0);
  for (const Value& item : iterate(v, pos)) {
    const Value x = attr.empty() ? item : attribute_of(item, attr, pos);
    if (!x.is_number() || !total.is_number())
      fail_at(pos, std::string("unsupported operand type(s) for +: '") + type_name(total) +
                       "' and '" + type_name(x) + "'");
    if (x.is_integral() && total.is_integral()) {
      int64_t r;
      if (__builtin_add_overflow(total.as_int(), x.as_int(), &r)) fail_at(pos, "integer overflow");
      total = Value::integer(r);
    } else {
      total = Value::number(total.as_float() + x.as_float());
    }
  }
  return total;
}

Value f_title(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("title", a, {}, pos);
  // Jinja's title(): words split at whitespace and -([{<; each word's first letter upper-cased,
  // the rest lower-cased.
  const std::string s = to_str(v);
  std::string out;
  bool word_start = true;
  for (size_t q = 0; q < s.size();) {
    const size_t start = q;
    const char32_t c = next_code_point(s, q);
    const std::string one = s.substr(start, q - start);
    const bool sep = is_py_space(c) || c == '-' || c == '(' || c == '{' || c == '[' || c == '<';
    if (sep) {
      out += one;
      word_start = true;
    } else {
      out += word_start ? upper_text(one) : lower_text(one);
      word_start = false;
    }
  }
  return str_value(std::move(out));
}

Value f_tojson(Interpreter& in, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  return filter_tojson(in, v, a, pos);
}

Value f_trim(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("trim", a, {"chars"}, pos);
  const std::string* chars = nullptr;
  std::string chars_text;
  if (p.has(0) && !p.get(0)->is_none()) {
    chars_text = to_str(*p.get(0));
    chars = &chars_text;
  }
  return str_value(py_strip(to_str(v), chars, true, true));
}

Value f_unique(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  return filter_unique(v, a, pos);
}

Value f_wordcount(Interpreter&, std::string_view, const Value& v, CallArgs& a, Pos pos) {
  Params p("wordcount", a, {}, pos);
  const std::string s = to_str(v);
  int64_t n = 0;
  bool in_word = false;
  for (size_t q = 0; q < s.size();) {
    const char32_t c = next_code_point(s, q);
    const bool word = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      c == '_' ||
                      (c >= 0xC0 && !is_py_space(c) && !(c >= 0x2000 && c <= 0x206F) &&
                       !(c >= 0x3000 && c <= 0x303F));
    if (word && !in_word) ++n;
    in_word = word;
  }
  return Value::integer(n);
}

const FilterEntry kFilters[] = {
    {"abs", f_abs},           {"attr", f_attr},
    {"batch", f_batch},       {"capitalize", f_capitalize},
    {"center", f_center},     {"count", f_length},
    {"d", f_default},         {"default", f_default},
    {"dictsort", f_dictsort}, {"e", f_escape},
    {"escape", f_escape},     {"first", f_first},
    {"float", f_float},       {"forceescape", f_escape},
    {"indent", f_indent},     {"int", f_int},
    {"items", f_items},       {"join", f_join},
    {"last", f_last},         {"length", f_length},
    {"list", f_list},         {"lower", f_lower},
    {"map", f_map},           {"max", f_minmax},
    {"min", f_minmax},        {"reject", f_select},
    {"rejectattr", f_select}, {"replace", f_replace},
    {"reverse", f_reverse},   {"round", f_round},
    {"safe", f_safe},         {"select", f_select},
    {"selectattr", f_select}, {"sort", f_sort},
    {"string", f_string},     {"sum", f_sum},
    {"title", f_title},       {"tojson", f_tojson},
    {"trim", f_trim},         {"unique", f_unique},
    {"upper", f_upper},       {"wordcount", f_wordcount},
};

FilterFn find_filter(std::string_view name) {
  for (const auto& f : kFilters)
    if (name == f.name) return f.fn;
  return nullptr;
}

// --- tests -------------------------------------------------------------------------------------

const char* const kTests[] = {
    "defined", "undefined", "none",   "boolean", "false",       "true",     "integer",
    "float",   "number",    "string", "mapping", "iterable",    "sequence", "callable",
    "sameas",  "escaped",   "lower",  "upper",   "even",        "odd",      "divisibleby",
    "eq",      "equalto",   "==",     "ne",      "!=",          "lt",       "lessthan",
    "<",       "le",        "<=",     "gt",      "greaterthan", ">",        "ge",
    ">=",      "in",        "filter", "test"};

// --- globals -----------------------------------------------------------------------------------

struct RangeFunction final : Function {
  RangeFunction() : Function("range") {}
  Value call(Interpreter& in, CallArgs& args, Pos pos) override {
    if (!args.keywords.empty()) fail_at(pos, "range() takes no keyword arguments");
    const size_t n = args.positional.size();
    if (n < 1 || n > 3) fail_at(pos, "range expected 1 to 3 arguments, got " + std::to_string(n));
    int64_t v[3] = {0, 0, 1};
    for (size_t k = 0; k < n; ++k) {
      if (!args.positional[k].is_integral())
        fail_at(pos, std::string("'") + type_name(args.positional[k]) +
                         "' object cannot be interpreted as an integer");
    }
    if (n == 1) {
      v[1] = args.positional[0].as_int();
    } else {
      v[0] = args.positional[0].as_int();
      v[1] = args.positional[1].as_int();
      if (n == 3) v[2] = args.positional[2].as_int();
    }
    if (v[2] == 0) fail_at(pos, "range() arg 3 must not be zero");
    // Count without overflow: work in long double for the span.
    const long double span = static_cast<long double>(v[1]) - static_cast<long double>(v[0]);
    long double count = 0;
    if ((v[2] > 0 && span > 0) || (v[2] < 0 && span < 0))
      count = std::ceil(span / static_cast<long double>(v[2]));
    if (count > static_cast<long double>(kMaxRange))
      fail_at(pos, "Range too big. The sandbox blocks ranges larger than MAX_RANGE (" +
                       std::to_string(kMaxRange) + ").");
    const auto c = static_cast<int64_t>(count);
    in.charge(static_cast<size_t>(c), pos);
    std::vector<Value> items;
    items.reserve(static_cast<size_t>(c));
    for (int64_t k = 0; k < c; ++k) items.push_back(Value::integer(v[0] + k * v[2]));
    return Value::list(std::move(items));
  }
};

Value make_dict_from_args(CallArgs& args, Pos pos, const char* fn, bool forbid_underscore) {
  std::vector<std::pair<std::string, Value>> items;
  auto put = [&](const std::string& k, const Value& v) {
    if (forbid_underscore && !k.empty() && k[0] == '_')
      fail_at(pos, "namespace attributes may not start with '_' (got '" + k + "')");
    for (auto& [key, val] : items) {
      if (key == k) {
        val = v;
        return;
      }
    }
    items.emplace_back(k, v);
  };
  if (args.positional.size() > 1)
    fail_at(pos, std::string(fn) + "() takes at most 1 positional argument");
  if (!args.positional.empty()) {
    const Value& src = args.positional[0];
    if (src.is_dict()) {
      for (const auto& [k, v] : src.as_dict().items) put(k, v);
    } else {
      for (const Value& pair : iterate(src, pos)) {
        if (!pair.is_list() || pair.as_list().items.size() != 2 ||
            !pair.as_list().items[0].is_string())
          fail_at(pos,
                  std::string(fn) + "() needs a mapping or (key, value) pairs with string keys");
        put(pair.as_list().items[0].as_string(), pair.as_list().items[1]);
      }
    }
  }
  for (const auto& [k, v] : args.keywords) put(k, v);
  return Value::dict(std::move(items));
}

struct NamespaceFunction final : Function {
  NamespaceFunction() : Function("namespace") {}
  Value call(Interpreter&, CallArgs& args, Pos pos) override {
    const Value d = make_dict_from_args(args, pos, "namespace", true);
    auto ns = std::make_shared<NamespaceObject>();
    ns->attrs = d.as_dict().items;
    return Value::object(std::move(ns));
  }
};

struct DictFunction final : Function {
  DictFunction() : Function("dict") {}
  Value call(Interpreter&, CallArgs& args, Pos pos) override {
    return make_dict_from_args(args, pos, "dict", false);
  }
};

struct RaiseFunction final : Function {
  RaiseFunction() : Function("raise_exception") {}
  Value call(Interpreter&, CallArgs& args, Pos pos) override {
    std::string message = args.positional.empty() ? std::string() : to_str(args.positional[0]);
    fail_at(pos, "the template raised an exception: " + message);
  }
};

struct StrftimeFunction final : Function {
  StrftimeFunction() : Function("strftime_now") {}
  Value call(Interpreter&, CallArgs& args, Pos pos) override {
    Params p("strftime_now", args, {"format"}, pos);
    const std::string& fmt = p.string(0, "strftime_now() format");
    if (fmt.size() > 256) fail_at(pos, "strftime_now() format is too long");
    const std::time_t now = std::time(nullptr);
    std::tm tm{};
    localtime_r(&now, &tm);
    std::string buf(1024, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), fmt.c_str(), &tm);
    buf.resize(n);
    return str_value(std::move(buf));
  }
};

}  // namespace

// --- printf-style formatting ----------------------------------------------------------------

Value percent_format(Interpreter& in, const std::string& fmt, const Value& args, Pos pos) {
  std::vector<Value> positional;
  if (args.is_list() && args.as_list().is_tuple) {
    positional = args.as_list().items;
  } else if (!args.is_dict()) {
    positional.push_back(args);
  }
  size_t next = 0;
  std::string out;
  for (size_t k = 0; k < fmt.size(); ++k) {
    if (fmt[k] != '%') {
      out += fmt[k];
      continue;
    }
    if (++k >= fmt.size()) fail_at(pos, "incomplete format");
    const Value* arg = nullptr;
    if (fmt[k] == '(') {
      const size_t close = fmt.find(')', k);
      if (close == std::string::npos || !args.is_dict()) fail_at(pos, "format requires a mapping");
      arg = args.as_dict().find(std::string_view(fmt).substr(k + 1, close - k - 1));
      if (!arg) fail_at(pos, "missing key in format mapping");
      k = close + 1;
    }
    std::string flags;
    while (k < fmt.size() && std::string_view("-+ 0#").find(fmt[k]) != std::string_view::npos)
      flags += fmt[k++];
    int width = 0, precision = -1;
    while (k < fmt.size() && fmt[k] >= '0' && fmt[k] <= '9' && width < 100000)
      width = width * 10 + (fmt[k++] - '0');
    if (k < fmt.size() && fmt[k] == '.') {
      precision = 0;
      ++k;
      while (k < fmt.size() && fmt[k] >= '0' && fmt[k] <= '9' && precision < 1000)
        precision = precision * 10 + (fmt[k++] - '0');
    }
    if (k >= fmt.size()) fail_at(pos, "incomplete format");
    const char conv = fmt[k];
    if (conv == '%') {
      out += '%';
      continue;
    }
    if (!arg) {
      if (next >= positional.size()) fail_at(pos, "not enough arguments for format string");
      arg = &positional[next++];
    }
    std::string piece;
    switch (conv) {
      case 's':
        piece = to_str(*arg);
        break;
      case 'r':
        piece = repr(*arg);
        break;
      case 'd':
      case 'i':
      case 'x':
      case 'X':
      case 'o': {
        if (!arg->is_number()) fail_type(pos, "%d format: a real number is required", *arg);
        const int64_t i = arg->kind() == Kind::kFloat
                              ? static_cast<int64_t>(std::trunc(arg->as_float()))
                              : arg->as_int();
        char buf[64];
        const char* spec = conv == 'x'   ? "%llx"
                           : conv == 'X' ? "%llX"
                           : conv == 'o' ? "%llo"
                                         : "%lld";
        std::snprintf(buf, sizeof(buf), spec, static_cast<long long>(i));
        piece = buf;
        if (flags.find('+') != std::string::npos && i >= 0) piece = "+" + piece;
        break;
      }
      case 'f':
      case 'F':
      case 'e':
      case 'g': {
        if (!arg->is_number()) fail_type(pos, "must be real number", *arg);
        char buf[512];
        const char spec[] = {'%', '.', '*', conv, '\0'};
        std::snprintf(buf, sizeof(buf), spec, precision < 0 ? 6 : std::min(precision, 300),
                      arg->as_float());
        piece = buf;
        break;
      }
      default:
        fail_at(pos, std::string("unsupported format character '") + conv + "'");
    }
    if ((conv == 's' || conv == 'r') && precision >= 0 &&
        static_cast<size_t>(precision) < piece.size())
      piece.resize(static_cast<size_t>(precision));
    const size_t len = code_point_count(piece);
    if (static_cast<size_t>(width) > len) {
      const std::string pad(static_cast<size_t>(width) - len,
                            flags.find('0') != std::string::npos && conv != 's' ? '0' : ' ');
      piece = flags.find('-') != std::string::npos ? piece + pad : pad + piece;
    }
    out += piece;
    in.check_string_size(out.size(), pos);
  }
  if (next < positional.size() && !(args.is_dict()))
    fail_at(pos, "not all arguments converted during string formatting");
  return Value::string(std::move(out));
}

// --- public entry points -----------------------------------------------------------------------

Value NamespaceObject::get_attr(std::string_view name) const {
  for (const auto& [k, v] : attrs)
    if (k == name) return v;
  return Value::undefined("'Namespace object' has no attribute '" + std::string(name) + "'");
}

void NamespaceObject::set(std::string_view name, Value v) {
  for (auto& [k, old] : attrs) {
    if (k == name) {
      old = std::move(v);
      return;
    }
  }
  attrs.emplace_back(std::string(name), std::move(v));
}

bool has_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}

bool has_test(std::string_view name) {
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
}

Value apply_filter(Interpreter& in, std::string_view name, const Value& operand, CallArgs& args,
                   Pos pos) {
  const FilterFn fn = find_filter(name);
  if (!fn) fail_at(pos, "no filter named '" + std::string(name) + "'");
  Value r = fn(in, name, operand, args, pos);
  in.check_depth(r, pos);
  return r;
}

bool apply_test(Interpreter& in, std::string_view name, const Value& v, CallArgs& args, Pos pos) {
  auto one_arg = [&](const char* what) -> const Value& {
    Params p(what, args, {"other"}, pos);
    if (!p.has(0)) fail_at(pos, std::string("test '") + what + "' needs an argument");
    return *p.get(0);
  };
  auto compare_test = [&](const char* what) {
    const Value& other = one_arg(what);
    require_defined(v, pos);
    require_defined(other, pos);
    return compare_or_fail(v, other, pos);
  };
  static const char* const kNoArgTests[] = {
      "defined", "undefined", "none",   "boolean", "false",    "true",     "integer",
      "float",   "number",    "string", "mapping", "iterable", "sequence", "callable",
      "escaped", "lower",     "upper",  "even",    "odd"};
  for (const char* t : kNoArgTests) {
    if (name == t && (!args.positional.empty() || !args.keywords.empty()))
      fail_at(pos, "test '" + std::string(name) + "' takes no arguments");
  }
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind() == Kind::kBool;
  if (name == "false") return v.kind() == Kind::kBool && !v.as_bool();
  if (name == "true") return v.kind() == Kind::kBool && v.as_bool();
  if (name == "integer") return v.kind() == Kind::kInt;
  if (name == "float") return v.kind() == Kind::kFloat;
  if (name == "number") return v.is_number();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "callable") return v.kind() == Kind::kFunction || v.is_undefined();
  if (name == "escaped") return false;
  if (name == "lower" || name == "upper") {
    const std::string s = to_str(v);
    const std::string up = upper_text(s), low = lower_text(s);
    return up != low && (name == "upper" ? s == up : s == low);
  }
  if (name == "even" || name == "odd" || name == "divisibleby") {
    require_defined(v, pos);
    int64_t d = 2;
    if (name == "divisibleby") {
      const Value& n = one_arg("divisibleby");
      if (!n.is_number()) fail_type(pos, "divisibleby needs a number", n);
      if (n.kind() == Kind::kFloat || v.kind() == Kind::kFloat) {
        if (n.as_float() == 0) fail_at(pos, "float modulo by zero");
        double q, r;
        (void)q;
        r = std::fmod(v.as_float(), n.as_float());
        return r == 0;
      }
      d = n.as_int();
      if (d == 0) fail_at(pos, "integer division or modulo by zero");
    }
    if (!v.is_number())
      fail_type(pos, std::string("'") + std::string(name) + "' needs a number", v);
    if (v.kind() == Kind::kFloat) {
      const double r = std::fmod(v.as_float(), static_cast<double>(d));
      return name == "odd" ? r != 0 : r == 0;
    }
    if (d == -1) return name != "odd";
    const int64_t r = v.as_int() % d;
    return name == "odd" ? r != 0 : r == 0;
  }
  if (name == "sameas") {
    const Value& other = one_arg("sameas");
    if (v.kind() != other.kind()) return false;
    switch (v.kind()) {
      case Kind::kNone:
        return true;  // two Undefined values are never the same object
      case Kind::kBool:
        return v.as_bool() == other.as_bool();
      case Kind::kInt:
        return v.as_int() == other.as_int();  // small ints are shared in CPython
      default:
        return false;
    }
  }
  if (name == "eq" || name == "equalto" || name == "==") return equals(v, one_arg("eq"));
  if (name == "ne" || name == "!=") return !equals(v, one_arg("ne"));
  if (name == "lt" || name == "lessthan" || name == "<") return compare_test("lt") < 0;
  if (name == "le" || name == "<=") return compare_test("le") <= 0;
  if (name == "gt" || name == "greaterthan" || name == ">") return compare_test("gt") > 0;
  if (name == "ge" || name == ">=") return compare_test("ge") >= 0;
  if (name == "in") {
    const Value& seq = one_arg("in");
    if (seq.is_string()) {
      if (!v.is_string()) fail_type(pos, "'in <string>' requires string as left operand", v);
      return seq.as_string().find(v.as_string()) != std::string::npos;
    }
    if (seq.is_dict()) return v.is_string() && seq.as_dict().find(v.as_string());
    for (const Value& item : iterate(seq, pos))
      if (equals(item, v)) return true;
    return false;
  }
  if (name == "filter") return v.is_string() && has_filter(v.as_string());
  if (name == "test") return v.is_string() && has_test(v.as_string());
  (void)in;
  fail_at(pos, "no test named '" + std::string(name) + "'");
}

Value get_attr(const Value& obj, std::string_view name, Pos pos) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_at(pos, obj.undefined_message());
    case Kind::kDict:
      if (is_dict_method(name))
        return Value::function(std::make_shared<BoundMethod>(obj, std::string(name)));
      if (is_dict_mutator(name)) return unsafe(obj, name);
      if (const Value* v = obj.as_dict().find(name)) return *v;
      return missing_attr(obj, name);
    case Kind::kString:
      if (!name.empty() && name[0] == '_') return unsafe(obj, name);
      if (is_str_method(name))
        return Value::function(std::make_shared<BoundMethod>(obj, std::string(name)));
      return missing_attr(obj, name);
    case Kind::kList:
      if (!name.empty() && name[0] == '_') return unsafe(obj, name);
      if (is_list_method(name))
        return Value::function(std::make_shared<BoundMethod>(obj, std::string(name)));
      if (is_list_mutator(name)) return unsafe(obj, name);
      return missing_attr(obj, name);
    case Kind::kObject:
      if (!name.empty() && name[0] == '_') return unsafe(obj, name);
      return obj.as_object().get_attr(name);
    default:
      if (!name.empty() && name[0] == '_') return unsafe(obj, name);
      return missing_attr(obj, name);
  }
}

Value get_item(const Value& obj, const Value& key, Pos pos) {
  switch (obj.kind()) {
    case Kind::kUndefined:
      fail_at(pos, obj.undefined_message());
    case Kind::kDict:
      if (key.is_string()) {
        if (const Value* v = obj.as_dict().find(key.as_string())) return *v;
        return get_attr(obj, key.as_string(), pos);
      }
      return Value::undefined("'dict object' has no attribute " + repr(key));
    case Kind::kList: {
      if (key.is_integral()) {
        size_t index;
        if (resolve_index(key.as_int(), obj.as_list().items.size(), index))
          return obj.as_list().items[index];
        return Value::undefined("'" + object_label(obj) + "' has no attribute " + repr(key));
      }
      if (key.is_string()) return get_attr(obj, key.as_string(), pos);
      return Value::undefined("'" + object_label(obj) + "' has no attribute " + repr(key));
    }
    case Kind::kString: {
      if (key.is_integral()) {
        const std::string& s = obj.as_string();
        size_t index;
        const bool ascii = std::all_of(s.begin(), s.end(),
                                       [](char c) { return static_cast<unsigned char>(c) < 0x80; });
        if (ascii) {
          if (resolve_index(key.as_int(), s.size(), index)) return str_value(s.substr(index, 1));
        } else if (resolve_index(key.as_int(), str_length(s), index)) {
          return char_at(s, index);
        }
        return Value::undefined("'str object' has no attribute " + repr(key));
      }
      if (key.is_string()) return get_attr(obj, key.as_string(), pos);
      return Value::undefined("'str object' has no attribute " + repr(key));
    }
    default:
      if (key.is_string()) return get_attr(obj, key.as_string(), pos);
      return Value::undefined("'" + object_label(obj) + "' has no attribute " + repr(key));
  }
}

Value slice_value(Interpreter& in, const Value& obj, const Value* start_v, const Value* stop_v,
                  const Value* step_v, Pos pos) {
  if (obj.is_undefined()) fail_at(pos, obj.undefined_message());
  if (!obj.is_string() && !obj.is_list())
    return Value::undefined("'" + object_label(obj) + "' cannot be sliced");
  auto index_of = [&](const Value* v, bool& given) -> int64_t {
    given = v && !v->is_none();
    if (!given) return 0;
    if (!v->is_integral()) fail_at(pos, "slice indices must be integers or None");
    return v->as_int();
  };
  bool has_start, has_stop, has_step;
  int64_t start = index_of(start_v, has_start);
  int64_t stop = index_of(stop_v, has_stop);
  int64_t step = index_of(step_v, has_step);
  if (!has_step) step = 1;
  if (step == 0) fail_at(pos, "slice step cannot be zero");
  std::vector<size_t> offsets;
  const std::string* s = obj.is_string() ? &obj.as_string() : nullptr;
  if (s) offsets = code_point_offsets(*s);
  const auto len = static_cast<int64_t>(s ? offsets.size() - 1 : obj.as_list().items.size());
  auto adjust = [&](int64_t& i, bool given, int64_t default_pos, int64_t default_neg) {
    if (!given) {
      i = step > 0 ? default_pos : default_neg;
      return;
    }
    if (i < 0) {
      i += len;
      if (i < 0) i = step < 0 ? -1 : 0;
    } else if (i >= len) {
      i = step < 0 ? len - 1 : len;
    }
  };
  adjust(start, has_start, 0, len - 1);
  adjust(stop, has_stop, len, -1);
  std::vector<int64_t> picks;
  if (step > 0) {
    for (int64_t i = start; i < stop; i += step) picks.push_back(i);
  } else {
    for (int64_t i = start; i > stop; i += step) picks.push_back(i);
  }
  in.charge(picks.size(), pos);
  if (s) {
    std::string out;
    for (int64_t i : picks)
      out.append(*s, offsets[static_cast<size_t>(i)],
                 offsets[static_cast<size_t>(i) + 1] - offsets[static_cast<size_t>(i)]);
    return str_value(std::move(out));
  }
  std::vector<Value> items;
  items.reserve(picks.size());
  for (int64_t i : picks) items.push_back(obj.as_list().items[static_cast<size_t>(i)]);
  return Value::list(std::move(items), obj.as_list().is_tuple);
}

bool call_method(Interpreter& in, const Value& self, std::string_view name, CallArgs& args, Pos pos,
                 Value& result) {
  switch (self.kind()) {
    case Kind::kString:
      if (!is_str_method(name)) return false;
      return string_method(in, self.as_string(), name, args, pos, result);
    case Kind::kDict:
      if (!is_dict_method(name) && !is_dict_mutator(name)) return false;
      return dict_method(self, name, args, pos, result);
    case Kind::kList:
      if (!is_list_method(name) && !is_list_mutator(name)) return false;
      return list_method(self, name, args, pos, result);
    default:
      return false;
  }
}

std::vector<Value> iterate(const Value& v, Pos pos) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return {};
    case Kind::kList:
      return v.as_list().items;
    case Kind::kDict: {
      std::vector<Value> keys;
      keys.reserve(v.as_dict().items.size());
      for (const auto& kv : v.as_dict().items) keys.push_back(str_value(kv.first));
      return keys;
    }
    case Kind::kString: {
      const std::string& s = v.as_string();
      std::vector<Value> chars;
      for (size_t q = 0; q < s.size();) {
        const size_t start = q;
        next_code_point(s, q);
        chars.push_back(str_value(s.substr(start, q - start)));
      }
      return chars;
    }
    default:
      fail_at(pos, std::string("'") + type_name(v) + "' object is not iterable");
  }
}

std::vector<std::pair<std::string, Value>> builtin_globals() {
  return {
      {"range", Value::function(std::make_shared<RangeFunction>())},
      {"namespace", Value::function(std::make_shared<NamespaceFunction>())},
      {"dict", Value::function(std::make_shared<DictFunction>())},
      {"raise_exception", Value::function(std::make_shared<RaiseFunction>())},
      {"strftime_now", Value::function(std::make_shared<StrftimeFunction>())},
  };
}

}  // namespace hearth::jinja
