// Jinja's tests (value is name(args)) and the global functions transformers provides: range,
// namespace (with NamespaceObject), dict, raise_exception and strftime_now.
#include <cmath>
#include <ctime>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

using detail::compare_or_fail;
using detail::fail_type;
using detail::Params;
using detail::require_defined;
using detail::str_value;

// --- tests -------------------------------------------------------------------------------------

namespace {

const char* const kTests[] = {
    "defined", "undefined", "none",   "boolean", "false",       "true",     "integer",
    "float",   "number",    "string", "mapping", "iterable",    "sequence", "callable",
    "sameas",  "escaped",   "lower",  "upper",   "even",        "odd",      "divisibleby",
    "eq",      "equalto",   "==",     "ne",      "!=",          "lt",       "lessthan",
    "<",       "le",        "<=",     "gt",      "greaterthan", ">",        "ge",
    ">=",      "in",        "filter", "test"};

}  // namespace

bool has_test(std::string_view name) {
  for (const char* t : kTests)
    if (name == t) return true;
  return false;
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

// --- globals -----------------------------------------------------------------------------------

namespace {

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
