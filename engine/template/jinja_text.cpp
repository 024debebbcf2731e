#include "engine/template/jinja_text.h"

#include <charconv>
#include <cmath>

namespace hearth::jinja {

char32_t next_code_point(std::string_view s, size_t& pos) {
  const auto b0 = static_cast<unsigned char>(s[pos]);
  size_t len = 0;
  char32_t cp = 0;
  if (b0 < 0x80) {
    ++pos;
    return b0;
  } else if ((b0 & 0xE0) == 0xC0) {
    len = 2;
    cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    len = 3;
    cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0) {
    len = 4;
    cp = b0 & 0x07;
  } else {
    ++pos;
    return b0;
  }
  if (pos + len > s.size()) {
    ++pos;
    return b0;
  }
  for (size_t k = 1; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[pos + k]);
    if ((b & 0xC0) != 0x80) {
      ++pos;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  pos += len;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size();) {
    if (static_cast<unsigned char>(s[pos]) < 0x80) {
      ++pos;
    } else {
      next_code_point(s, pos);
    }
    ++n;
  }
  return n;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  for (size_t pos = 0; pos < s.size();) {
    offsets.push_back(pos);
    next_code_point(s, pos);
  }
  offsets.push_back(s.size());
  return offsets;
}

bool is_py_space(char32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right) {
  std::vector<char32_t> set;
  if (chars) {
    for (size_t p = 0; p < chars->size();) set.push_back(next_code_point(*chars, p));
  }
  auto strippable = [&](char32_t cp) {
    if (!chars) return is_py_space(cp);
    for (char32_t c : set)
      if (c == cp) return true;
    return false;
  };
  size_t begin = 0, end = s.size();
  if (left) {
    while (begin < end) {
      size_t p = begin;
      if (!strippable(next_code_point(s, p))) break;
      begin = p;
    }
  }
  if (right) {
    while (end > begin) {
      size_t start = end - 1;  // find the start of the last code point
      while (start > begin && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80 &&
             end - start < 4)
        --start;
      size_t p = start;
      char32_t cp = next_code_point(s, p);
      if (p != end) {  // not a well-formed sequence ending here: treat the last byte alone
        start = end - 1;
        cp = static_cast<unsigned char>(s[start]);
      }
      if (!strippable(cp)) break;
      end = start;
    }
  }
  return std::string(s.substr(begin, end - begin));
}

static bool is_line_break(char32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  size_t start = 0, pos = 0;
  while (pos < s.size()) {
    size_t here = pos;
    const char32_t cp = next_code_point(s, pos);
    if (!is_line_break(cp)) continue;
    lines.emplace_back(s.substr(start, here - start));
    if (cp == '\r' && pos < s.size() && s[pos] == '\n') ++pos;
    start = pos;
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

// Simple one-to-one case pairs: ASCII, Latin-1, Greek and Cyrillic.
static char32_t upper_cp(char32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0xE0) return c;
  if (c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c >= 0x3B1 && c <= 0x3C9 && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}

static char32_t lower_cp(char32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0xC0) return c;
  if (c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}

static bool is_cased(char32_t c) {
  return upper_cp(c) != c || lower_cp(c) != c || c == 0xDF || c == 0xB5 || c == 0xAA || c == 0xBA;
}

template <typename F>
static std::string map_code_points(std::string_view s, F f) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<unsigned char>(s[pos]);
    if (b < 0x80) {
      out += static_cast<char>(f(static_cast<char32_t>(b)));
      ++pos;
      continue;
    }
    const size_t start = pos;
    const char32_t cp = next_code_point(s, pos);
    if (pos - start == 1) {
      out += s[start];  // an invalid byte: copy it as it is
    } else {
      append_utf8(out, f(cp));
    }
  }
  return out;
}

std::string upper_text(std::string_view s) {
  std::string out = map_code_points(s, upper_cp);
  // Python upper-cases the sharp s to "SS".
  for (size_t p = out.find("\xC3\x9F"); p != std::string::npos; p = out.find("\xC3\x9F", p + 2))
    out.replace(p, 2, "SS");
  return out;
}
std::string lower_text(std::string_view s) {
  return map_code_points(s, lower_cp);
}

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_code_points(s, [&](char32_t c) {
    const char32_t r = first ? upper_cp(c) : lower_cp(c);
    first = false;
    return r;
  });
}

std::string py_title(std::string_view s) {
  bool previous_cased = false;
  return map_code_points(s, [&](char32_t c) {
    const bool cased = is_cased(c);
    const char32_t r = cased ? (previous_cased ? lower_cp(c) : upper_cp(c)) : c;
    previous_cased = cased;
    return r;
  });
}

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v < 0 ? "-inf" : "inf";
  if (v == 0) return std::signbit(v) ? "-0.0" : "0.0";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
  std::string_view text(buf, static_cast<size_t>(res.ptr - buf));
  std::string out;
  if (text[0] == '-') {
    out += '-';
    text.remove_prefix(1);
  }
  const size_t e_pos = text.find('e');
  std::string digits;
  for (char c : text.substr(0, e_pos))
    if (c != '.') digits += c;
  int exponent = 0;
  std::from_chars(text.data() + e_pos + 1 + (text[e_pos + 1] == '+' ? 1 : 0),
                  text.data() + text.size(), exponent);
  const int decpt = exponent + 1;  // value = 0.DIGITS * 10^decpt
  const int ndigits = static_cast<int>(digits.size());
  if (decpt <= -4 || decpt > 16) {
    out += digits[0];
    if (ndigits > 1) {
      out += '.';
      out.append(digits, 1);
    }
    const int e = decpt - 1;
    out += e < 0 ? "e-" : "e+";
    const int a = e < 0 ? -e : e;
    if (a < 10) out += '0';
    out += std::to_string(a);
  } else if (decpt <= 0) {
    out += "0.";
    out.append(static_cast<size_t>(-decpt), '0');
    out += digits;
  } else if (decpt >= ndigits) {
    out += digits;
    out.append(static_cast<size_t>(decpt - ndigits), '0');
    out += ".0";
  } else {
    out.append(digits, 0, static_cast<size_t>(decpt));
    out += '.';
    out.append(digits, static_cast<size_t>(decpt));
  }
  return out;
}

static void append_hex(std::string& out, uint32_t v, int width) {
  static const char* kHex = "0123456789abcdef";
  for (int shift = (width - 1) * 4; shift >= 0; shift -= 4) out += kHex[(v >> shift) & 0xF];
}

// Code points that Python's str.isprintable() rejects, for the ranges that matter in practice.
static bool py_unprintable(char32_t c) {
  if (c < 0x20 || c == 0x7F) return true;
  if (c >= 0x80 && c <= 0xA0) return true;
  if (c == 0xAD) return true;
  if (c >= 0x2000 && c <= 0x200F) return true;
  if (c >= 0x2028 && c <= 0x202F) return true;
  if (c >= 0x205F && c <= 0x206F) return true;
  if (c == 0x3000 || c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFB)) return true;
  if (c >= 0xD800 && c <= 0xF8FF) return true;  // surrogates and private use
  return c > 0x10FFFF;
}

std::string py_string_repr(std::string_view s) {
  const bool has_single = s.find('\'') != std::string_view::npos;
  const bool has_double = s.find('"') != std::string_view::npos;
  const char quote = (has_single && !has_double) ? '"' : '\'';
  std::string out;
  out.reserve(s.size() + 2);
  out += quote;
  for (size_t pos = 0; pos < s.size();) {
    const size_t start = pos;
    const char32_t c = next_code_point(s, pos);
    if (c == static_cast<char32_t>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (py_unprintable(c)) {
      if (c < 0x100) {
        out += "\\x";
        append_hex(out, c, 2);
      } else if (c < 0x10000) {
        out += "\\u";
        append_hex(out, c, 4);
      } else {
        out += "\\U";
        append_hex(out, c, 8);
      }
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += quote;
  return out;
}

void append_json_string(std::string& out, std::string_view s, bool ensure_ascii) {
  out += '"';
  for (size_t pos = 0; pos < s.size();) {
    const auto b = static_cast<unsigned char>(s[pos]);
    if (b >= 0x20 && b < 0x7F && b != '"' && b != '\\') {
      out += static_cast<char>(b);
      ++pos;
      continue;
    }
    const size_t start = pos;
    const char32_t c = next_code_point(s, pos);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      case '\b':
        out += "\\b";
        continue;
      case '\f':
        out += "\\f";
        continue;
      default:
        break;
    }
    if (c < 0x20 || (ensure_ascii && c >= 0x7F)) {
      if (c >= 0x10000) {
        const uint32_t v = c - 0x10000;
        out += "\\u";
        append_hex(out, 0xD800 | (v >> 10), 4);
        out += "\\u";
        append_hex(out, 0xDC00 | (v & 0x3FF), 4);
      } else {
        out += "\\u";
        append_hex(out, c, 4);
      }
    } else {
      out.append(s.substr(start, pos - start));
    }
  }
  out += '"';
}

}  // namespace hearth::jinja
