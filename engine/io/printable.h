// Names read from files go into error messages; control characters (NUL above all, which would
// cut a message short) are shown as \xNN.
#pragma once

#include <string>
#include <string_view>

namespace hearth {

// `escape_high` also escapes bytes >= 0x80 (for text that may hold invalid UTF-8).
inline std::string printable(std::string_view s, bool escape_high = false) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f || (escape_high && c >= 0x80)) {
      out += "\\x";
      out += kDigits[c >> 4];
      out += kDigits[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

}  // namespace hearth
