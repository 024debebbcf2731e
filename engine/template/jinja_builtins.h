// What chat templates can do with values: Jinja's filters and tests, Python's str/dict/list
// methods, attribute and item access with the sandbox's rules (no underscore attributes, no
// mutating methods), and the global functions transformers provides (range, namespace, dict,
// raise_exception, strftime_now).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/template/jinja_value.h"

namespace hearth::jinja {

bool has_filter(std::string_view name);
bool has_test(std::string_view name);

Value apply_filter(Interpreter& in, std::string_view name, const Value& operand, CallArgs& args,
                   Pos pos);
bool apply_test(Interpreter& in, std::string_view name, const Value& operand, CallArgs& args,
                Pos pos);

// obj.name (Jinja tries the attribute, then the item).
Value get_attr(const Value& obj, std::string_view name, Pos pos);
// obj[key] (Jinja tries the item, then the attribute).
Value get_item(const Value& obj, const Value& key, Pos pos);
// obj[start:stop:step]; null pointers for omitted parts.
Value slice_value(Interpreter& in, const Value& obj, const Value* start, const Value* stop,
                  const Value* step, Pos pos);
// Calls a str, list or dict method on self; false when self has no such method.
bool call_method(Interpreter& in, const Value& self, std::string_view name, CallArgs& args, Pos pos,
                 Value& result);
// The elements a for loop visits: list items, dict keys, string characters; Undefined is empty.
std::vector<Value> iterate(const Value& v, Pos pos);

// Python's printf-style "fmt % args" (%s %r %d %i %f %x %%, width, precision, %(name)s).
Value percent_format(Interpreter& in, const std::string& fmt, const Value& args, Pos pos);

// Global functions, by name.
std::vector<std::pair<std::string, Value>> builtin_globals();

// A mutable attribute bag: namespace(...).
struct NamespaceObject final : NativeObject {
  const char* type_name() const override { return "Namespace"; }
  Value get_attr(std::string_view name) const override;
  bool is_namespace() const override { return true; }
  void set(std::string_view name, Value v);
  std::vector<std::pair<std::string, Value>> attrs;
};

}  // namespace hearth::jinja
