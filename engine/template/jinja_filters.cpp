// Jinja's filters (value|name(args)): the table of every filter chat templates may use, and their
// implementations except select, map, sort and their kin (in jinja_filters_sequence.cpp).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

using detail::attribute_of;
using detail::dict_items;
using detail::fail_type;
using detail::filter_dictsort;
using detail::filter_map;
using detail::filter_minmax;
using detail::filter_select;
using detail::filter_sort;
using detail::filter_unique;
using detail::is_dict_method;
using detail::is_dict_mutator;
using detail::join_values;
using detail::kEmpty;
using detail::missing_attr;
using detail::Params;
using detail::replace_all;
using detail::require_defined;
using detail::str_length;
using detail::str_value;
using detail::string_method;

namespace {

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

}  // namespace

bool has_filter(std::string_view name) {
  return find_filter(name) != nullptr;
}

Value apply_filter(Interpreter& in, std::string_view name, const Value& operand, CallArgs& args,
                   Pos pos) {
  const FilterFn fn = find_filter(name);
  if (!fn) fail_at(pos, "no filter named '" + std::string(name) + "'");
  Value r = fn(in, name, operand, args, pos);
  in.check_depth(r, pos);
  return r;
}

}  // namespace hearth::jinja
