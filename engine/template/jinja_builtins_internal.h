// Internal to the Jinja built-ins: helpers shared by the files that implement jinja_builtins.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/template/jinja_value.h"

namespace hearth::jinja::detail {

// Binds a call's positional and keyword arguments to a Python-style parameter list.
class Params {
 public:
  Params(std::string_view fn, CallArgs& args, std::initializer_list<const char*> names, Pos pos);
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

extern const Value kEmpty;

inline Value str_value(std::string s) {
  return Value::string(std::move(s));
}

[[noreturn]] void fail_type(Pos pos, const std::string& what, const Value& v);
void require_defined(const Value& v, Pos pos);
// "None", or "<type> object" as Python's error messages name a value.
std::string object_label(const Value& v);

// Attribute names that exist on Python's str, dict and list, split into the methods templates
// may call and the mutating ones the immutable sandbox refuses.
bool is_str_method(std::string_view n);
bool is_dict_method(std::string_view n);
bool is_dict_mutator(std::string_view n);
bool is_list_method(std::string_view n);
bool is_list_mutator(std::string_view n);

// Undefined, saying that obj has no attribute name.
Value missing_attr(const Value& obj, std::string_view name);
// Length in code points.
size_t str_length(const std::string& s);
// str() of each item, joined by sep.
std::string join_values(const std::vector<Value>& items, const std::string& sep);
// Three-way comparison (-1, 0, 1) of a and b; fails when they cannot be ordered.
int compare_or_fail(const Value& a, const Value& b, Pos pos);

// --- from jinja_methods.cpp

// str.replace(old, repl, count); count < 0 replaces every occurrence.
std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count, Interpreter& in, Pos pos);
// Calls str method name on s; false when there is no such method.
bool string_method(Interpreter& in, const std::string& s, std::string_view name, CallArgs& args,
                   Pos pos, Value& result);
// dict.items(): a list of (key, value) tuples.
Value dict_items(const DictObj& d);

// --- from jinja_filters_sequence.cpp

// Jinja's attribute getter for map/selectattr/sort: "a.b.0" walks items (then attributes).
Value attribute_of(const Value& item, const std::string& path, Pos pos);
// select / reject / selectattr / rejectattr
Value filter_select(Interpreter& in, std::string_view name, const Value& v, CallArgs& args,
                    Pos pos);
Value filter_map(Interpreter& in, const Value& v, CallArgs& args, Pos pos);
Value filter_sort(Interpreter& in, std::string_view name, const Value& v, CallArgs& args, Pos pos);
Value filter_minmax(std::string_view name, const Value& v, CallArgs& args, Pos pos);
Value filter_unique(const Value& v, CallArgs& args, Pos pos);
Value filter_dictsort(const Value& v, CallArgs& args, Pos pos);

}  // namespace hearth::jinja::detail
