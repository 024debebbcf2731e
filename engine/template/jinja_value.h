// Values of the chat-template interpreter: Python's data types as Jinja sees them (None, bool,
// int, float, str, list, tuple, dict), Jinja's Undefined, and the few objects templates may touch
// (namespace, loop, functions). Strings, lists and dicts are immutable and shared; only namespace
// attributes change, as in transformers' ImmutableSandboxedEnvironment.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace hearth::jinja {

// A place in the template source, for error messages.
struct Pos {
  uint32_t line = 0;
  uint32_t column = 0;
};

// Throws Error(kInvalidFile) "chat template, line L, column C: message".
[[noreturn]] void fail_at(Pos pos, const std::string& message);

// Lists and dicts nest at most this deep (data from the caller and values the template builds).
inline constexpr uint32_t kMaxValueDepth = 256;

enum class Kind : uint8_t {
  kUndefined,
  kNone,
  kBool,
  kInt,
  kFloat,
  kString,
  kList,  // list or tuple
  kDict,
  kObject,    // namespace, loop
  kFunction,  // built-in function, macro, bound method
};

class Value;
class Interpreter;
struct ListObj;
struct DictObj;
struct NativeObject;
struct Function;

struct Object {
  virtual ~Object() = default;
};

struct StrObj final : Object {
  explicit StrObj(std::string v) : s(std::move(v)) {}
  std::string s;
};

struct UndefObj final : Object {
  explicit UndefObj(std::string h) : hint(std::move(h)) {}
  std::string hint;  // what Jinja would say when the value is used: "'x' is undefined"
};

class Value {
 public:
  Value() : i_(0) {}
  static Value undefined() { return Value(); }
  static Value undefined(std::string hint);
  static Value none() { return Value(Kind::kNone); }
  static Value boolean(bool b) {
    Value v(Kind::kBool);
    v.b_ = b;
    return v;
  }
  static Value integer(int64_t i) {
    Value v(Kind::kInt);
    v.i_ = i;
    return v;
  }
  static Value number(double f) {
    Value v(Kind::kFloat);
    v.f_ = f;
    return v;
  }
  static Value string(std::string s);
  // Lists and dicts compute their nesting depth; callers check it against kMaxValueDepth.
  static Value list(std::vector<Value> items, bool tuple = false);
  static Value dict(std::vector<std::pair<std::string, Value>> items);
  static Value object(std::shared_ptr<NativeObject> o);
  static Value function(std::shared_ptr<Function> f);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_list() const { return kind_ == Kind::kList; }
  bool is_dict() const { return kind_ == Kind::kDict; }
  // int, float or bool (bool is an int in Python).
  bool is_number() const {
    return kind_ == Kind::kInt || kind_ == Kind::kFloat || kind_ == Kind::kBool;
  }
  bool is_integral() const { return kind_ == Kind::kInt || kind_ == Kind::kBool; }

  bool as_bool() const { return b_; }
  int64_t as_int() const { return kind_ == Kind::kBool ? (b_ ? 1 : 0) : i_; }
  double as_float() const { return kind_ == Kind::kFloat ? f_ : static_cast<double>(as_int()); }
  const std::string& as_string() const { return static_cast<const StrObj*>(obj_.get())->s; }
  const ListObj& as_list() const;
  const DictObj& as_dict() const;
  NativeObject& as_object() const;
  Function& as_function() const;
  // Nesting depth of a list or dict (0 for anything else).
  uint32_t depth() const;
  // The message to give when an Undefined is used where a value is needed.
  std::string undefined_message() const;

 private:
  explicit Value(Kind k) : kind_(k), i_(0) {}
  Kind kind_ = Kind::kUndefined;
  union {
    bool b_;
    int64_t i_;
    double f_;
  };
  std::shared_ptr<Object> obj_;
};

struct ListObj final : Object {
  std::vector<Value> items;
  bool is_tuple = false;
  uint32_t depth = 1;
};

struct DictObj final : Object {
  std::vector<std::pair<std::string, Value>> items;  // insertion order, like a Python dict
  uint32_t depth = 1;
  const Value* find(std::string_view key) const;
};

struct NativeObject : Object {
  virtual const char* type_name() const = 0;
  // Returns Undefined when there is no such attribute.
  virtual Value get_attr(std::string_view name) const = 0;
  virtual bool is_namespace() const { return false; }
};

struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Function : Object {
  explicit Function(std::string n) : name(std::move(n)) {}
  virtual Value call(Interpreter& interp, CallArgs& args, Pos pos) = 0;
  std::string name;
};

inline const ListObj& Value::as_list() const {
  return *static_cast<const ListObj*>(obj_.get());
}
inline const DictObj& Value::as_dict() const {
  return *static_cast<const DictObj*>(obj_.get());
}
inline NativeObject& Value::as_object() const {
  return *static_cast<NativeObject*>(obj_.get());
}
inline Function& Value::as_function() const {
  return *static_cast<Function*>(obj_.get());
}

// Python semantics.
bool truthy(const Value& v);
const char* type_name(const Value& v);              // "str", "int", "dict", "NoneType", ...
void append_str(std::string& out, const Value& v);  // str(v); Undefined prints nothing
std::string to_str(const Value& v);
std::string repr(const Value& v);
bool equals(const Value& a, const Value& b);
// -1, 0 or 1 for values Python can order (numbers, strings, lists, tuples); false otherwise.
bool try_compare(const Value& a, const Value& b, int& result);

// json.dumps(v, ensure_ascii, indent, separators, sort_keys) as Python writes it.
struct JsonOptions {
  bool ensure_ascii = false;
  bool pretty = false;  // indent given
  std::string indent;
  std::string item_separator = ", ";
  std::string key_separator = ": ";
  bool sort_keys = false;
};
void append_json(std::string& out, const Value& v, const JsonOptions& options, Pos pos,
                 int level = 0);

// The caller's JSON context as template values (dict key order kept for ordered_json).
Value from_json(const nlohmann::json& j, uint32_t depth = 1);
Value from_json(const nlohmann::ordered_json& j, uint32_t depth = 1);

}  // namespace hearth::jinja
