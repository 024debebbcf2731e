// Python's printf-style string formatting, "fmt % args", as templates use it.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include "engine/template/jinja_builtins.h"
#include "engine/template/jinja_builtins_internal.h"
#include "engine/template/jinja_interpreter.h"
#include "engine/template/jinja_text.h"

namespace hearth::jinja {

using detail::fail_type;

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

}  // namespace hearth::jinja
