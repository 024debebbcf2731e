// Attribute and item access with the sandbox's rules (no underscore attributes, no mutating
// methods), slicing, and the elements a for loop visits.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

using detail::is_dict_method;
using detail::is_dict_mutator;
using detail::is_list_method;
using detail::is_list_mutator;
using detail::is_str_method;
using detail::missing_attr;
using detail::object_label;
using detail::str_length;
using detail::str_value;

namespace {

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

}  // namespace

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

}  // namespace hearth::jinja
