// The filters that pick, order and reshape a sequence's items (select, reject, selectattr,
// rejectattr, map, sort, min, max, unique, dictsort) and the attribute paths they follow.
#include <algorithm>
#include <charconv>
#include <string>
#include <utility>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja::detail {
namespace {

Value sort_key(const Value& v, bool case_sensitive) {
  if (!case_sensitive && v.is_string()) return str_value(lower_text(v.as_string()));
  return v;
}

}  // namespace

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

}  // namespace hearth::jinja::detail
