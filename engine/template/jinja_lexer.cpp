#include "engine/template/jinja_lexer.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "engine/template/jinja_text.h"

namespace hearth::jinja {
namespace {

bool is_ws(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}
bool is_name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
bool is_name_char(char c) {
  return is_name_start(c) || (c >= '0' && c <= '9');
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}

// Python's \s (Unicode whitespace) over UTF-8 text, from the right.
std::string_view rstrip_unicode(std::string_view text) {
  std::string stripped = py_strip(text, nullptr, false, true);
  return text.substr(0, stripped.size());
}

// True when text[from:] is one or more whitespace characters (Python's \s+ full match).
bool all_whitespace(std::string_view text, size_t from) {
  if (from >= text.size()) return false;
  for (size_t p = from; p < text.size();)
    if (!is_py_space(next_code_point(text, p))) return false;
  return true;
}

// Jinja rewrites every \r\n, \r and \n as \n and drops one trailing newline.
std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t k = 0; k < source.size(); ++k) {
    if (source[k] == '\r') {
      out += '\n';
      if (k + 1 < source.size() && source[k + 1] == '\n') ++k;
    } else {
      out += source[k];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_newlines(source)) {
    line_starts_.push_back(0);
    for (size_t k = 0; k < src_.size(); ++k)
      if (src_[k] == '\n') line_starts_.push_back(k + 1);
  }

  std::vector<Token> run() {
    size_t p = 0;
    bool line_starting = true;
    const size_t n = src_.size();
    while (p < n) {
      const size_t t = find_tag(p);
      if (t == std::string::npos) {
        emit_data(std::string_view(src_).substr(p), p);
        break;
      }
      const char kind = src_[t + 1];
      const char sign = (t + 2 < n && (src_[t + 2] == '-' || src_[t + 2] == '+')) ? src_[t + 2] : 0;
      size_t body = t + 2 + (sign ? 1 : 0);
      std::string_view text = std::string_view(src_).substr(p, t - p);
      text = strip_before_tag(text, sign, kind != '{', line_starting);
      emit_data(text, p);
      size_t after = 0;
      if (kind == '#') {
        after = skip_comment(t, body);
      } else if (kind == '%' && is_raw_begin(body, after)) {
        after = lex_raw(t, after);
      } else {
        push(kind == '%' ? Tok::kBlockBegin : Tok::kVarBegin, t);
        after = lex_tag(t, body, kind == '%');
      }
      line_starting = after > 0 && src_[after - 1] == '\n';
      p = after;
    }
    push(Tok::kEof, src_.size());
    return std::move(out_);
  }

 private:
  Pos pos_of(size_t offset) const {
    const auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
    const size_t line = static_cast<size_t>(it - line_starts_.begin());
    const size_t column = offset - line_starts_[line - 1] + 1;
    return Pos{static_cast<uint32_t>(line), static_cast<uint32_t>(column)};
  }

  [[noreturn]] void error(size_t offset, const std::string& message) const {
    fail_at(pos_of(offset), message);
  }

  Token& push(Tok type, size_t offset, std::string text = {}) {
    Token tok;
    tok.type = type;
    tok.text = std::move(text);
    tok.pos = pos_of(offset);
    out_.push_back(std::move(tok));
    return out_.back();
  }

  void emit_data(std::string_view text, size_t offset) {
    if (!text.empty()) push(Tok::kData, offset, std::string(text));
  }

  size_t find_tag(size_t from) const {
    for (size_t k = src_.find('{', from); k != std::string::npos; k = src_.find('{', k + 1)) {
      if (k + 1 < src_.size() && (src_[k + 1] == '{' || src_[k + 1] == '%' || src_[k + 1] == '#'))
        return k;
    }
    return std::string::npos;
  }

  // Whitespace control for the text in front of a tag: "-" strips all whitespace; otherwise
  // lstrip_blocks removes the indentation in front of a block or comment tag on its own line.
  static std::string_view strip_before_tag(std::string_view text, char sign, bool block_like,
                                           bool line_starting) {
    if (sign == '-') return rstrip_unicode(text);
    if (sign == '+' || !block_like) return text;
    const size_t nl = text.rfind('\n');
    const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if ((l_pos > 0 || line_starting) && all_whitespace(text, l_pos)) return text.substr(0, l_pos);
    return text;
  }

  size_t skip_whitespace(size_t p) const {
    while (p < src_.size()) {
      size_t q = p;
      if (!is_py_space(next_code_point(src_, q))) break;
      p = q;
    }
    return p;
  }

  size_t skip_comment(size_t tag, size_t body) {
    const size_t end = src_.find("#}", body);
    if (end == std::string::npos) error(tag, "unterminated comment: missing '#}'");
    const char sign = end > body ? src_[end - 1] : 0;
    size_t after = end + 2;
    if (sign == '-') {
      after = skip_whitespace(after);
    } else if (sign != '+' && after < src_.size() && src_[after] == '\n') {
      ++after;  // trim_blocks
    }
    return after;
  }

  bool is_raw_begin(size_t body, size_t& after) const {
    size_t q = body;
    while (q < src_.size() && is_ws(src_[q])) ++q;
    if (src_.compare(q, 3, "raw") != 0) return false;
    q += 3;
    if (q < src_.size() && is_name_char(src_[q])) return false;
    while (q < src_.size() && is_ws(src_[q])) ++q;
    if (src_.compare(q, 3, "-%}") == 0) {
      after = skip_whitespace(q + 3);
      return true;
    }
    if (src_.compare(q, 2, "%}") == 0) {
      after = q + 2;
      return true;
    }
    return false;
  }

  size_t lex_raw(size_t tag, size_t content_start) {
    for (size_t e = src_.find("{%", content_start); e != std::string::npos;
         e = src_.find("{%", e + 1)) {
      size_t q = e + 2;
      const char sign = (q < src_.size() && (src_[q] == '-' || src_[q] == '+')) ? src_[q] : 0;
      if (sign) ++q;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      while (q < src_.size() && is_ws(src_[q])) ++q;
      size_t after = 0;
      if (src_.compare(q, 3, "+%}") == 0) {
        after = q + 3;
      } else if (src_.compare(q, 3, "-%}") == 0) {
        after = skip_whitespace(q + 3);
      } else if (src_.compare(q, 2, "%}") == 0) {
        after = q + 2;
        if (after < src_.size() && src_[after] == '\n') ++after;
      } else {
        continue;
      }
      std::string_view content = std::string_view(src_).substr(content_start, e - content_start);
      const bool line_starting = content_start > 0 && src_[content_start - 1] == '\n';
      emit_data(strip_before_tag(content, sign, true, line_starting), content_start);
      return after;
    }
    error(tag, "unterminated raw block: missing '{% endraw %}'");
  }

  // Lexes the inside of {{ }} or {% %} up to its end delimiter; returns the offset after it.
  size_t lex_tag(size_t tag, size_t p, bool block) {
    std::vector<char> brackets;
    const size_t n = src_.size();
    while (true) {
      while (p < n && is_ws(src_[p])) ++p;
      if (p >= n)
        error(tag,
              block ? "unterminated block tag: missing '%}'" : "unterminated '{{': missing '}}'");
      if (brackets.empty()) {
        if (block) {
          if (src_.compare(p, 3, "+%}") == 0) {
            push(Tok::kBlockEnd, p);
            return p + 3;
          }
          if (src_.compare(p, 3, "-%}") == 0) {
            push(Tok::kBlockEnd, p);
            return skip_whitespace(p + 3);
          }
          if (src_.compare(p, 2, "%}") == 0) {
            push(Tok::kBlockEnd, p);
            return (p + 2 < n && src_[p + 2] == '\n') ? p + 3 : p + 2;  // trim_blocks
          }
        } else {
          if (src_.compare(p, 3, "-}}") == 0) {
            push(Tok::kVarEnd, p);
            return skip_whitespace(p + 3);
          }
          if (src_.compare(p, 2, "}}") == 0) {
            push(Tok::kVarEnd, p);
            return p + 2;
          }
        }
      }
      const char c = src_[p];
      if (is_digit(c)) {
        p = lex_number(p);
      } else if (is_name_start(c)) {
        size_t q = p;
        while (q < n && is_name_char(src_[q])) ++q;
        push(Tok::kName, p, src_.substr(p, q - p));
        p = q;
      } else if (c == '\'' || c == '"') {
        p = lex_string(p);
      } else {
        p = lex_operator(p, brackets);
      }
    }
  }

  size_t lex_number(size_t p) {
    const size_t n = src_.size();
    const size_t start = p;
    auto digits = [&](size_t q, auto accept) {
      while (q < n && (accept(src_[q]) || (src_[q] == '_' && q + 1 < n && accept(src_[q + 1]))))
        ++q;
      return q;
    };
    auto dec = [](char c) { return is_digit(c); };
    if (src_[p] == '0' && p + 1 < n &&
        std::string_view("xXoObB").find(src_[p + 1]) != std::string_view::npos) {
      const char base_char = static_cast<char>(src_[p + 1] | 0x20);
      const int base = base_char == 'x' ? 16 : (base_char == 'o' ? 8 : 2);
      auto accept = [base](char c) {
        if (base == 16) return is_digit(c) || ((c | 0x20) >= 'a' && (c | 0x20) <= 'f');
        return c >= '0' && c < static_cast<char>('0' + base);
      };
      size_t q = p + 2;
      if (q < n && src_[q] == '_') ++q;
      const size_t end = digits(q, accept);
      if (end == q) error(start, "invalid integer literal");
      std::string text;
      for (size_t k = q; k < end; ++k)
        if (src_[k] != '_') text += src_[k];
      int64_t value = 0;
      const auto res = std::from_chars(text.data(), text.data() + text.size(), value, base);
      if (res.ec != std::errc()) error(start, "integer literal too large");
      push(Tok::kInt, start).int_value = value;
      return end;
    }
    size_t q = digits(p, dec);
    bool is_float = false;
    if (q + 1 < n && src_[q] == '.' && is_digit(src_[q + 1])) {
      q = digits(q + 1, dec);
      is_float = true;
    }
    if (q < n && (src_[q] == 'e' || src_[q] == 'E')) {
      size_t e = q + 1;
      if (e < n && (src_[e] == '+' || src_[e] == '-')) ++e;
      if (e < n && is_digit(src_[e])) {
        q = digits(e, dec);
        is_float = true;
      }
    }
    std::string text;
    for (size_t k = start; k < q; ++k)
      if (src_[k] != '_') text += src_[k];
    if (!is_float && text.size() > 1 && text[0] == '0' &&
        text.find_first_not_of('0') != std::string::npos)
      error(start, "leading zeros in decimal integer literals are not permitted");
    if (is_float) {
      double value = 0;
      const auto res = std::from_chars(text.data(), text.data() + text.size(), value);
      if (res.ec == std::errc::result_out_of_range) {
        value = HUGE_VAL;  // Python reads 1e999 as inf
      } else if (res.ec != std::errc()) {
        error(start, "invalid number");
      }
      push(Tok::kFloat, start).float_value = value;
    } else {
      int64_t value = 0;
      const auto res = std::from_chars(text.data(), text.data() + text.size(), value);
      if (res.ec != std::errc()) error(start, "integer literal too large");
      push(Tok::kInt, start).int_value = value;
    }
    return q;
  }

  static int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = static_cast<char>(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }

  // A string literal with Python's escapes (Jinja decodes them with "unicode-escape").
  size_t lex_string(size_t p) {
    const char quote = src_[p];
    const size_t n = src_.size();
    std::string value;
    size_t q = p + 1;
    while (true) {
      if (q >= n) error(p, "unterminated string literal");
      const char c = src_[q];
      if (c == quote) break;
      if (c != '\\') {
        value += c;
        ++q;
        continue;
      }
      if (q + 1 >= n) error(p, "unterminated string literal");
      const char e = src_[q + 1];
      q += 2;
      switch (e) {
        case '\n':
          break;
        case '\\':
          value += '\\';
          break;
        case '\'':
          value += '\'';
          break;
        case '"':
          value += '"';
          break;
        case 'a':
          value += '\a';
          break;
        case 'b':
          value += '\b';
          break;
        case 'f':
          value += '\f';
          break;
        case 'n':
          value += '\n';
          break;
        case 'r':
          value += '\r';
          break;
        case 't':
          value += '\t';
          break;
        case 'v':
          value += '\v';
          break;
        case 'x':
        case 'u':
        case 'U': {
          const int width = e == 'x' ? 2 : (e == 'u' ? 4 : 8);
          uint32_t cp = 0;
          for (int k = 0; k < width; ++k) {
            const int h = q < n ? hex_value(src_[q]) : -1;
            if (h < 0) error(q, std::string("truncated \\") + e + " escape in string literal");
            cp = cp * 16 + static_cast<uint32_t>(h);
            ++q;
          }
          if (cp > 0x10FFFF) error(q, "illegal Unicode character in string literal");
          append_utf8(value, cp);
          break;
        }
        case 'N':
          error(q, "\\N{...} escapes are not supported in chat templates");
        default:
          if (e >= '0' && e <= '7') {
            uint32_t cp = static_cast<uint32_t>(e - '0');
            for (int k = 0; k < 2 && q < n && src_[q] >= '0' && src_[q] <= '7'; ++k, ++q)
              cp = cp * 8 + static_cast<uint32_t>(src_[q] - '0');
            append_utf8(value, cp);
          } else {
            value += '\\';  // Python keeps unknown escapes as they are
            value += e;
          }
      }
    }
    push(Tok::kString, p, std::move(value));
    return q + 1;
  }

  size_t lex_operator(size_t p, std::vector<char>& brackets) {
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(p, 2, op) == 0) {
        push(Tok::kOp, p, op);
        return p + 2;
      }
    }
    const char c = src_[p];
    if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
      size_t q = p;
      const char32_t cp = next_code_point(src_, q);
      std::string shown;
      if (cp >= 0x20 && cp != 0x7F) {
        append_utf8(shown, cp);
      } else {
        shown = "\\x" + std::string(1, "0123456789abcdef"[cp >> 4]) + "0123456789abcdef"[cp & 15];
      }
      error(p, "unexpected character '" + shown + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') {
      if (brackets.size() >= 1024) error(p, "brackets nested too deeply");
      brackets.push_back(c == '(' ? ')' : (c == '[' ? ']' : '}'));
    } else if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty()) error(p, std::string("unexpected '") + c + "'");
      if (brackets.back() != c)
        error(p, std::string("unexpected '") + c + "', expected '" + brackets.back() + "'");
      brackets.pop_back();
    }
    push(Tok::kOp, p, std::string(1, c));
    return p + 1;
  }

  std::string src_;
  std::vector<size_t> line_starts_;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace hearth::jinja
