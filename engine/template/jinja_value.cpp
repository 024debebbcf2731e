#include "engine/template/jinja_value.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

#include "engine/core/error.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

void fail_at(Pos pos, const std::string& message) {
  fail(ErrorCode::kInvalidFile, "chat template, line " + std::to_string(pos.line) + ", column " +
                                    std::to_string(pos.column) + ": " + message);
}

const Value* DictObj::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

Value Value::undefined(std::string hint) {
  Value v;
  v.obj_ = std::make_shared<UndefObj>(std::move(hint));
  return v;
}

Value Value::string(std::string s) {
  Value v(Kind::kString);
  v.obj_ = std::make_shared<StrObj>(std::move(s));
  return v;
}

Value Value::list(std::vector<Value> items, bool tuple) {
  auto obj = std::make_shared<ListObj>();
  uint32_t depth = 0;
  for (const Value& item : items) depth = std::max(depth, item.depth());
  obj->items = std::move(items);
  obj->is_tuple = tuple;
  obj->depth = depth + 1;
  Value v(Kind::kList);
  v.obj_ = std::move(obj);
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  auto obj = std::make_shared<DictObj>();
  uint32_t depth = 0;
  for (const auto& item : items) depth = std::max(depth, item.second.depth());
  obj->items = std::move(items);
  obj->depth = depth + 1;
  Value v(Kind::kDict);
  v.obj_ = std::move(obj);
  return v;
}

Value Value::object(std::shared_ptr<NativeObject> o) {
  Value v(Kind::kObject);
  v.obj_ = std::move(o);
  return v;
}

Value Value::function(std::shared_ptr<Function> f) {
  Value v(Kind::kFunction);
  v.obj_ = std::move(f);
  return v;
}

uint32_t Value::depth() const {
  if (kind_ == Kind::kList) return as_list().depth;
  if (kind_ == Kind::kDict) return as_dict().depth;
  return 0;
}

std::string Value::undefined_message() const {
  if (obj_) return static_cast<const UndefObj*>(obj_.get())->hint;
  return "a value is undefined";
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return false;
    case Kind::kBool:
      return v.as_bool();
    case Kind::kInt:
      return v.as_int() != 0;
    case Kind::kFloat:
      return v.as_float() != 0.0;
    case Kind::kString:
      return !v.as_string().empty();
    case Kind::kList:
      return !v.as_list().items.empty();
    case Kind::kDict:
      return !v.as_dict().items.empty();
    case Kind::kObject:
    case Kind::kFunction:
      return true;
  }
  return false;
}

const char* type_name(const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return "Undefined";
    case Kind::kNone:
      return "NoneType";
    case Kind::kBool:
      return "bool";
    case Kind::kInt:
      return "int";
    case Kind::kFloat:
      return "float";
    case Kind::kString:
      return "str";
    case Kind::kList:
      return v.as_list().is_tuple ? "tuple" : "list";
    case Kind::kDict:
      return "dict";
    case Kind::kObject:
      return v.as_object().type_name();
    case Kind::kFunction:
      return "function";
  }
  return "object";
}

static void append_repr(std::string& out, const Value& v);

void append_str(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      return;
    case Kind::kNone:
      out += "None";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "True" : "False";
      return;
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Kind::kFloat:
      out += py_float_repr(v.as_float());
      return;
    case Kind::kString:
      out += v.as_string();
      return;
    default:
      append_repr(out, v);
      return;
  }
}

std::string to_str(const Value& v) {
  if (v.is_string()) return v.as_string();
  std::string out;
  append_str(out, v);
  return out;
}

static void append_repr(std::string& out, const Value& v) {
  switch (v.kind()) {
    case Kind::kUndefined:
      out += "Undefined";
      return;
    case Kind::kString:
      out += py_string_repr(v.as_string());
      return;
    case Kind::kList: {
      const ListObj& l = v.as_list();
      out += l.is_tuple ? '(' : '[';
      for (size_t k = 0; k < l.items.size(); ++k) {
        if (k) out += ", ";
        append_repr(out, l.items[k]);
      }
      if (l.is_tuple && l.items.size() == 1) out += ',';
      out += l.is_tuple ? ')' : ']';
      return;
    }
    case Kind::kDict: {
      out += '{';
      bool first = true;
      for (const auto& [k, item] : v.as_dict().items) {
        if (!first) out += ", ";
        first = false;
        out += py_string_repr(k);
        out += ": ";
        append_repr(out, item);
      }
      out += '}';
      return;
    }
    case Kind::kObject: {
      out += '<';
      out += v.as_object().type_name();
      out += '>';
      return;
    }
    case Kind::kFunction: {
      out += "<function ";
      out += v.as_function().name;
      out += '>';
      return;
    }
    default:
      append_str(out, v);
      return;
  }
}

std::string repr(const Value& v) {
  std::string out;
  append_repr(out, v);
  return out;
}

bool equals(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Kind::kUndefined:
    case Kind::kNone:
      return true;
    case Kind::kString:
      return a.as_string() == b.as_string();
    case Kind::kList: {
      const ListObj& x = a.as_list();
      const ListObj& y = b.as_list();
      if (&x == &y) return true;
      if (x.is_tuple != y.is_tuple || x.items.size() != y.items.size()) return false;
      for (size_t k = 0; k < x.items.size(); ++k)
        if (!equals(x.items[k], y.items[k])) return false;
      return true;
    }
    case Kind::kDict: {
      const DictObj& x = a.as_dict();
      const DictObj& y = b.as_dict();
      if (&x == &y) return true;
      if (x.items.size() != y.items.size()) return false;
      for (const auto& [k, item] : x.items) {
        const Value* other = y.find(k);
        if (!other || !equals(item, *other)) return false;
      }
      return true;
    }
    case Kind::kObject:
      return &a.as_object() == &b.as_object();
    case Kind::kFunction:
      return &a.as_function() == &b.as_function();
    default:
      return false;
  }
}

bool try_compare(const Value& a, const Value& b, int& result) {
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) {
      result = a.as_int() < b.as_int() ? -1 : (a.as_int() > b.as_int() ? 1 : 0);
    } else {
      const double x = a.as_float(), y = b.as_float();
      if (std::isnan(x) || std::isnan(y)) {
        result = 2;  // unordered: every comparison but != is false
        return true;
      }
      result = x < y ? -1 : (x > y ? 1 : 0);
    }
    return true;
  }
  if (a.is_string() && b.is_string()) {
    const int c = a.as_string().compare(b.as_string());
    result = c < 0 ? -1 : (c > 0 ? 1 : 0);
    return true;
  }
  if (a.is_list() && b.is_list() && a.as_list().is_tuple == b.as_list().is_tuple) {
    const auto& x = a.as_list().items;
    const auto& y = b.as_list().items;
    for (size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (equals(x[k], y[k])) continue;
      return try_compare(x[k], y[k], result);
    }
    result = x.size() < y.size() ? -1 : (x.size() > y.size() ? 1 : 0);
    return true;
  }
  return false;
}

static void append_indent(std::string& out, const JsonOptions& o, int level) {
  out += '\n';
  for (int k = 0; k < level; ++k) out += o.indent;
}

void append_json(std::string& out, const Value& v, const JsonOptions& o, Pos pos, int level) {
  switch (v.kind()) {
    case Kind::kNone:
      out += "null";
      return;
    case Kind::kBool:
      out += v.as_bool() ? "true" : "false";
      return;
    case Kind::kInt:
      out += std::to_string(v.as_int());
      return;
    case Kind::kFloat: {
      const double d = v.as_float();
      if (std::isnan(d)) {
        out += "NaN";
      } else if (std::isinf(d)) {
        out += d < 0 ? "-Infinity" : "Infinity";
      } else {
        out += py_float_repr(d);
      }
      return;
    }
    case Kind::kString:
      append_json_string(out, v.as_string(), o.ensure_ascii);
      return;
    case Kind::kList: {
      const auto& items = v.as_list().items;
      if (items.empty()) {
        out += "[]";
        return;
      }
      out += '[';
      for (size_t k = 0; k < items.size(); ++k) {
        if (k) out += o.item_separator;
        if (o.pretty) append_indent(out, o, level + 1);
        append_json(out, items[k], o, pos, level + 1);
      }
      if (o.pretty) append_indent(out, o, level);
      out += ']';
      return;
    }
    case Kind::kDict: {
      const auto& items = v.as_dict().items;
      if (items.empty()) {
        out += "{}";
        return;
      }
      std::vector<const std::pair<std::string, Value>*> order;
      order.reserve(items.size());
      for (const auto& item : items) order.push_back(&item);
      if (o.sort_keys)
        std::stable_sort(order.begin(), order.end(),
                         [](auto* x, auto* y) { return x->first < y->first; });
      out += '{';
      bool first = true;
      for (const auto* item : order) {
        if (!first) out += o.item_separator;
        first = false;
        if (o.pretty) append_indent(out, o, level + 1);
        append_json_string(out, item->first, o.ensure_ascii);
        out += o.key_separator;
        append_json(out, item->second, o, pos, level + 1);
      }
      if (o.pretty) append_indent(out, o, level);
      out += '}';
      return;
    }
    default:
      fail_at(pos, std::string("Object of type ") + type_name(v) + " is not JSON serializable");
  }
}

template <typename Json>
static Value convert_json(const Json& j, uint32_t depth) {
  if (depth > kMaxValueDepth)
    fail(ErrorCode::kInvalidArgument,
         "chat template context nests deeper than " + std::to_string(kMaxValueDepth) + " levels");
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return Value::none();
    case nlohmann::json::value_t::boolean:
      return Value::boolean(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Value::integer(j.template get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
      const auto u = j.template get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        return Value::number(static_cast<double>(u));
      return Value::integer(static_cast<int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
      return Value::number(j.template get<double>());
    case nlohmann::json::value_t::string:
      return Value::string(j.template get_ref<const std::string&>());
    case nlohmann::json::value_t::array: {
      std::vector<Value> items;
      items.reserve(j.size());
      for (const auto& item : j) items.push_back(convert_json(item, depth + 1));
      return Value::list(std::move(items));
    }
    case nlohmann::json::value_t::object: {
      std::vector<std::pair<std::string, Value>> items;
      items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it)
        items.emplace_back(it.key(), convert_json(it.value(), depth + 1));
      return Value::dict(std::move(items));
    }
    default:
      return Value::none();  // binary and discarded values have no template meaning
  }
}

Value from_json(const nlohmann::json& j, uint32_t depth) {
  return convert_json(j, depth);
}
Value from_json(const nlohmann::ordered_json& j, uint32_t depth) {
  return convert_json(j, depth);
}

}  // namespace hearth::jinja
