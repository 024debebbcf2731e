// Python's str, dict and list methods as chat templates call them (s.strip(), d.items(),
// l.index(x), ...): the immutable sandbox refuses the mutating ones.
#include <algorithm>
#include <string>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

using detail::dict_items;
using detail::is_dict_method;
using detail::is_dict_mutator;
using detail::is_list_method;
using detail::is_list_mutator;
using detail::is_str_method;
using detail::Params;
using detail::str_value;
using detail::string_method;

namespace {

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

// --- dict and list methods ---------------------------------------------------------------------

const Value kNone = Value::none();

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

}  // namespace

// The string and dict helpers the filters share (see jinja_builtins_internal.h).
namespace detail {

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

Value dict_items(const DictObj& d) {
  std::vector<Value> items;
  items.reserve(d.items.size());
  for (const auto& [k, v] : d.items) items.push_back(Value::list({str_value(k), v}, true));
  return Value::list(std::move(items));
}

}  // namespace detail

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

}  // namespace hearth::jinja
